"""The client's token bucket under cancellation: a wait for a token that is cancelled gives the
token back, as Go's ``rate.Limiter.Wait`` (client-go's limiter) cancels its reservation when
its context ends. A request cancelled while it waited (a leadership term ending, a timeout)
never went out, and the token it held must not make the next request wait."""

from __future__ import annotations

import asyncio

import pytest

from slicectl.kube.ratelimit import TokenBucket


async def test_a_wait_for_a_token_that_is_cancelled_gives_the_token_back() -> None:
    bucket = TokenBucket(0.01, 1, clock=lambda: 0.0)  # time stands still: no refill
    assert bucket.try_take()  # empty: the next token is 100 s away
    waiting = asyncio.create_task(bucket.acquire())
    await asyncio.sleep(0)  # it reserved its token and sleeps for it
    assert not waiting.done()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert bucket.reserve() == 100.0  # one token away, not two
