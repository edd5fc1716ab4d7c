"""The batching policy alone: the real WorkQueue under synthetic arrivals, on a simulated clock.

The scenario benchmarks measure the whole controller against an API server, where the
machine's noise moves a p99 by tens of milliseconds from run to run. This one isolates the
queue's decisions (hold a change for the window, or sync it at once; settle a burst; grow a
stream's window): it replays seeded arrival times into :class:`WorkQueue` with a clock it
advances itself, each sync taking a fixed time, and reports per workload the syncs per change,
the share of changes that waited and how long. Deterministic: the same code gives the same
table on any machine.

With ``--qps`` (the controller's client limit: 20, burst 30) it also replays the token
bucket, as the syncer uses it: a sync with something to write takes a token first and, if it
had to wait for it, writes what arrived meanwhile too (plan at the token) and tells the queue
so, as the controller does (a throttled stream takes its share of the rate at once); a sync left
with nothing to write takes none. Every sync is one write here (a slice boundary's second write is
not modelled). Without it the replay shows the queue's decisions alone; with it, the regime
of the ``initial`` scenario, where every controller is rate-limited for most of the stream.
``--tokens`` is what the bucket holds when the arrivals start: in the ``initial`` scenario the
controller has just spent most of its burst on its start-up lists and watches and on the
selectors' placeholder slices, so its writes are paced by the refill from about half a second
in (BENCHMARKS.md, "Initial").

    python -m benchmarks.queue_policy [--window 0.1] [--sync-seconds 0.005] [--qps 20]
                                      [--burst 30] [--tokens N]
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.runner import percentile
from slicectl.controller.queue import WorkQueue
from slicectl.kube.ratelimit import TokenBucket

Arrival = tuple[float, str, bool]  # (time, selector key, removes an endpoint)


@dataclass(frozen=True)
class Outcome:
    changes: int
    syncs: int
    waits: tuple[float, ...]  # per change: from its arrival to the start of the sync covering it

    @property
    def syncs_per_change(self) -> float:
        return self.syncs / self.changes

    @property
    def held(self) -> float:
        """The share of changes that waited (more than a millisecond)."""
        return sum(1 for w in self.waits if w > 0.001) / len(self.waits)

    def wait_ms(self, q: float) -> float:
        return 1000.0 * (percentile(list(self.waits), q) or 0.0)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def replay(arrivals: list[Arrival], window: float = 0.1, sync_seconds: float = 0.005,
           qps: float = 0.0, burst: int = 30, tokens: int | None = None) -> Outcome:
    """Feed ``arrivals`` (times from 1000 s on) to a WorkQueue and run its syncs, one worker
    per key: a key is synced once it is due and its previous sync has finished. ``qps`` > 0
    puts each write behind a token of a bucket of that rate and ``burst``, holding ``tokens``
    (default: the burst) when the arrivals start."""
    clock = _Clock()
    queue = WorkQueue(clock=clock, write_rate=qps)
    bucket = TokenBucket(qps, burst, clock=clock) if qps > 0 else None
    if bucket is not None and tokens is not None:
        for _ in range(burst - tokens):
            bucket.reserve()  # spent before the workload (start-up requests, placeholders)
    ordered = sorted(arrivals)
    uncovered: dict[str, list[float]] = {}
    tokened: dict[str, float] = {}  # key -> when the token its sync waits for is due
    finishing: dict[str, float] = {}  # key -> when its sync in flight ends
    waits: list[float] = []
    syncs = i = 0

    def write(key: str) -> None:
        nonlocal syncs
        waits.extend(clock.now - t for t in uncovered.pop(key, []))
        syncs += 1
        finishing[key] = clock.now + sync_seconds

    while True:
        next_arrival = ordered[i][0] if i < len(ordered) else None
        next_done = min(finishing.values()) if finishing else None
        next_token = min(tokened.values()) if tokened else None
        due = queue.next_due()
        times = [x for x in (next_arrival, next_done, next_token, due) if x is not None]
        if not times:
            break
        clock.now = max(clock.now, min(times))
        if next_done is not None and next_done <= clock.now:
            key = min(finishing, key=finishing.__getitem__)
            del finishing[key]
            queue.done(key)
        elif next_token is not None and next_token <= clock.now:
            key = min(tokened, key=tokened.__getitem__)
            del tokened[key]
            write(key)  # planned again at the token: what came meanwhile goes too
            queue.throttled(key)  # as the controller passes the wait on
        elif next_arrival is not None and next_arrival <= clock.now:
            _, key, removal = ordered[i]
            i += 1
            uncovered.setdefault(key, []).append(clock.now)
            queue.add(key, batch=window, removal=removal, changed_at=clock.now)
        else:
            got = queue.get_nowait()
            if got is None:  # it settles: due later now
                continue
            key = got[0]
            if not uncovered.get(key):  # its changes went out with a write that waited
                finishing[key] = clock.now + sync_seconds
            elif bucket is not None and (wait := bucket.reserve()) > 0:
                tokened[key] = clock.now + wait
            else:
                write(key)
    return Outcome(len(ordered), syncs, tuple(waits))


def lattice_flap(selectors: int = 10, rate: float = 20.0, seconds: float = 60.0,
                 seed: int = 1) -> list[Arrival]:
    """The flap scenario's timing: one flip every 1/rate s, of a random pod and selector."""
    rng = random.Random(seed)
    return [(1000.0 + n / rate, f"sel-{rng.randrange(selectors)}", rng.random() < 0.5)
            for n in range(round(rate * seconds))]


def poisson_flap(selectors: int = 10, rate: float = 20.0, seconds: float = 60.0,
                 seed: int = 1) -> list[Arrival]:
    """Independent flips at exponentially distributed gaps."""
    rng = random.Random(seed)
    out: list[Arrival] = []
    t = 1000.0
    while (t := t + rng.expovariate(rate)) < 1000.0 + seconds:
        out.append((t, f"sel-{rng.randrange(selectors)}", rng.random() < 0.5))
    return out


def stream(selectors: int = 10, pods: int = 200, seconds: float = 7.5,
           seed: int = 1, removal: bool = False) -> list[Arrival]:
    """Pods added to (or with ``removal``, deleted from) every selector at random times over
    ``seconds`` (an initial creation, a scale-down)."""
    rng = random.Random(seed)
    return [(1000.0 + rng.uniform(0.0, seconds), f"sel-{s}", removal)
            for s in range(selectors) for _ in range(pods)]


def bursts(steps: int = 20, size: int = 25, step_seconds: float = 0.3,
           seed: int = 1) -> list[Arrival]:
    """A rollout's rhythm on one selector: per step ``size`` adds within 30 ms, then as many
    removals 150 ms later."""
    rng = random.Random(seed)
    out: list[Arrival] = []
    for s in range(steps):
        start = 1000.0 + s * step_seconds
        out += [(start + rng.uniform(0.0, 0.03), "sel-0", False) for _ in range(size)]
        out += [(start + 0.15 + rng.uniform(0.0, 0.03), "sel-0", True) for _ in range(size)]
    return out


WORKLOADS: dict[str, Callable[[], list[Arrival]]] = {
    "flap, 20/s on a 50 ms lattice, 10 selectors, 60 s": lattice_flap,
    "flap, Poisson 20/s, 10 selectors, 60 s": poisson_flap,
    "stream, 10 selectors x 200 adds over 7.5 s": stream,
    "stream, 10 selectors x 200 adds over 2 s": lambda: stream(seconds=2.0),
    "scale-up, 1 selector x 500 adds over 1.2 s": lambda: stream(1, 500, 1.2),
    "slow scale-up, 1 selector x 500 adds over 30 s": lambda: stream(1, 500, 30.0),
    "scale-down, 1 selector x 500 removals over 1.2 s": lambda: stream(1, 500, 1.2,
                                                                       removal=True),
    "bursts, 20 x (25 adds, 25 removals)": bursts,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.queue_policy",
                                     description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--window", type=float, default=0.1, help="--batch-period, seconds")
    parser.add_argument("--sync-seconds", type=float, default=0.005, help="time one sync takes")
    parser.add_argument("--qps", type=float, default=0.0,
                        help="writes behind a token bucket of this rate (0: unlimited)")
    parser.add_argument("--burst", type=int, default=30, help="the bucket's burst")
    parser.add_argument("--tokens", type=int, default=None,
                        help="tokens in the bucket when the workload starts (default: burst)")
    args = parser.parse_args(argv)
    print("| workload | changes | syncs / change | changes held | wait p50 / p90 / p99 ms |")
    print("|---|---|---|---|---|")
    for name, make in WORKLOADS.items():
        o = replay(make(), args.window, args.sync_seconds, args.qps, args.burst, args.tokens)
        print(f"| {name} | {o.changes} | {o.syncs_per_change:.3f} ({o.syncs}) | {o.held:.1%} | "
              f"{o.wait_ms(0.5):.0f} / {o.wait_ms(0.9):.0f} / {o.wait_ms(0.99):.0f} |")


if __name__ == "__main__":
    main()
