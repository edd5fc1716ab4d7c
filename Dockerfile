# slicectl controller image.
#
# Stage 1 builds the project's wheel and installs it, with its runtime dependencies only (no
# [dev] extras, at the versions constraints.txt pins: what CI tested), into a virtualenv at
# /opt/venv. Stage 2 is the same slim Python base with just that venv: no compilers, no pip
# cache, no sources. Both stages use the same base image and the same venv path, so the venv's
# interpreter symlinks stay valid when copied.
#
# The runtime runs as uid/gid 65532 (non-root) and writes nothing to its root filesystem: bytecode
# is compiled at build time and PYTHONDONTWRITEBYTECODE stops any write at run time, so it works
# with readOnlyRootFilesystem (the Helm chart mounts an emptyDir at /tmp for anything else).
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/venv
COPY pyproject.toml README.md constraints.txt ./
COPY slicectl ./slicectl
# slicectl/crds/ links to the chart's CRD, the single source of truth: bring the target along.
COPY charts/slicectl/crds ./charts/slicectl/crds
RUN /opt/venv/bin/pip wheel --no-deps --wheel-dir /wheels . \
 && /opt/venv/bin/pip install --compile --constraint constraints.txt /wheels/*.whl \
 && /opt/venv/bin/pip uninstall --yes pip setuptools \
 && /opt/venv/bin/slicectl --help > /dev/null

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH \
    HOME=/tmp
RUN groupadd --system --gid 65532 slicectl \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /tmp \
      --shell /usr/sbin/nologin slicectl
COPY --from=builder /opt/venv /opt/venv
USER 65532:65532
WORKDIR /tmp
# 8080: /metrics (--metrics-bind-address); 8081: /healthz and /readyz (--health-probe-bind-address).
EXPOSE 8080 8081
ENTRYPOINT ["slicectl", "run"]
