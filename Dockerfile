# The xamt images, from one file: the orchestrator and library environments, each env built
# by `xamt env install` from images/<lib>/requirements-${VARIANT}.txt.
#
#   docker build -t xamt .                                  # every library (the all-in-one)
#   docker build --build-arg LIB=torch -t xamt-torch .      # one library and the numpy reference
#   docker build --build-arg VARIANT=cuda -t xamt:cuda .    # CUDA environments
#
# `docker run xamt` fuzzes across the image's libraries; any other xamt command works too.
# Build from the repository root (the context needs pyproject.toml, xamt/, images/,
# templates/). Each library's env is its own stage, which depends only on the orchestrator:
# building one image reuses the env stages another build made. Build arguments, local wheels
# and the CA-bundle secret: images/README.md.

ARG BASE_IMAGE=debian:bookworm-slim
# One library of images/ (numpy, torch, tensorflow, jax, paddle, mindspore, mxnet), or empty
# for all of them.
ARG LIB=
# cpu or cuda: which requirements-<variant>.txt each env is built from.
ARG VARIANT=cpu
# Local wheel folders (torch's CPU build is not on PyPI): the build context's wheels/ folder,
# or one mounted at /mnt/wheels; folders that do not exist are skipped.
ARG XAMT_FIND_LINKS=/ctx/wheels:/mnt/wheels

# --- builder: Python 3.11 and every shared library an env needs to load ----------------------
FROM ${BASE_IMAGE} AS builder
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG DEBIAN_FRONTEND=noninteractive
# Debian packages are not pinned: a bookworm point release replaces the old versions on the
# mirrors, so a pin would break the build; the Python pins are what must not move.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        ca-certificates libgomp1 libquadmath0 python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
ENV XAMT_HOME=/opt/xamt \
    XAMT_ENV_PYTHON=/usr/bin/python3 \
    PATH=/opt/xamt/venv/bin:${PATH} \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    UV_NO_CACHE=1 \
    UV_COMPILE_BYTECODE=1 \
    UV_PYTHON_DOWNLOADS=never

# --- orchestrator: xamt itself, in its own venv, and the env installer ---------------------
FROM builder AS orchestrator
ARG VARIANT
ARG XAMT_FIND_LINKS
ENV XAMT_VARIANT=${VARIANT} \
    XAMT_FIND_LINKS=${XAMT_FIND_LINKS}
COPY pyproject.toml README.md /src/
COPY xamt /src/xamt
COPY images /src/images
COPY templates /src/templates
# An optional build secret "ca_bundle" (a PEM file) is trusted by pip and uv: for networks
# that intercept HTTPS. Without it the image's own CA certificates are used.
RUN --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then export PIP_CERT=/run/secrets/ca_bundle; fi \
 && python3 -m venv /opt/xamt/venv \
 && /opt/xamt/venv/bin/pip install --no-cache-dir /src \
 && install -m 0755 /src/images/install-env.sh /usr/local/bin/xamt-install-env \
 && rm -rf /src

# --- one stage per library env (images/install-env.sh: the CA bundle, local wheels, the marker
# written after the library loaded in a worker, mindspore's CPU-only plugins) ----------------
FROM orchestrator AS env-numpy
RUN --mount=type=bind,target=/ctx --mount=type=secret,id=ca_bundle xamt-install-env numpy

FROM orchestrator AS env-torch
RUN --mount=type=bind,target=/ctx --mount=type=secret,id=ca_bundle xamt-install-env torch

FROM orchestrator AS env-tensorflow
RUN --mount=type=bind,target=/ctx --mount=type=secret,id=ca_bundle xamt-install-env tensorflow

FROM orchestrator AS env-jax
RUN --mount=type=bind,target=/ctx --mount=type=secret,id=ca_bundle xamt-install-env jax

FROM orchestrator AS env-paddle
RUN --mount=type=bind,target=/ctx --mount=type=secret,id=ca_bundle xamt-install-env paddle

FROM orchestrator AS env-mindspore
RUN --mount=type=bind,target=/ctx --mount=type=secret,id=ca_bundle xamt-install-env mindspore

FROM orchestrator AS env-mxnet
RUN --mount=type=bind,target=/ctx --mount=type=secret,id=ca_bundle xamt-install-env mxnet

# --- every env but numpy's (the image copies numpy's in any case), for an empty LIB ----------
FROM scratch AS env-all
COPY --from=env-torch /opt/xamt/envs/ /opt/xamt/envs/
COPY --from=env-tensorflow /opt/xamt/envs/ /opt/xamt/envs/
COPY --from=env-jax /opt/xamt/envs/ /opt/xamt/envs/
COPY --from=env-paddle /opt/xamt/envs/ /opt/xamt/envs/
COPY --from=env-mindspore /opt/xamt/envs/ /opt/xamt/envs/
COPY --from=env-mxnet /opt/xamt/envs/ /opt/xamt/envs/

# --- the env LIB names (env-all when LIB is empty); only the stages it needs are built -------
# hadolint ignore=DL3006
FROM env-${LIB:-all} AS env-selected

# --- the image: a slim runtime with the orchestrator and the envs, as a non-root user -----
FROM ${BASE_IMAGE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG DEBIAN_FRONTEND=noninteractive
ARG LIB
ARG VARIANT
ARG XAMT_VERSION=dev
ARG VCS_REF=unknown
ARG SOURCE_URL=https://github.com/xamt/xamt
ARG BASE_IMAGE
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 libgomp1 libquadmath0 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 --user-group --shell /bin/bash xamt \
 && install -d -o xamt -g xamt /opt/xamt/catalog /opt/xamt/logs /work
COPY --from=orchestrator /opt/xamt/venv /opt/xamt/venv
COPY --from=env-numpy /opt/xamt/envs/ /opt/xamt/envs/
COPY --from=env-selected /opt/xamt/envs/ /opt/xamt/envs/
LABEL org.opencontainers.image.title="xamt${LIB:+-}${LIB}" \
      org.opencontainers.image.description="xamt, the cross-framework differential fuzzer, with the numpy reference environment and ${LIB:-every library}'s" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="${SOURCE_URL}" \
      org.opencontainers.image.url="${SOURCE_URL}" \
      org.opencontainers.image.documentation="${SOURCE_URL}#readme" \
      org.opencontainers.image.version="${XAMT_VERSION}" \
      org.opencontainers.image.revision="${VCS_REF}" \
      org.opencontainers.image.vendor="xamt" \
      org.opencontainers.image.base.name="${BASE_IMAGE}"
# XAMT_LIBS is what `xamt fuzz --libs` defaults to: numpy and LIB, or (empty) every library.
ENV XAMT_HOME=/opt/xamt \
    XAMT_VARIANT=${VARIANT} \
    XAMT_LIBS=${LIB:+numpy,}${LIB} \
    PATH=/opt/xamt/venv/bin:${PATH} \
    PYTHONUNBUFFERED=1
USER 10001:10001
WORKDIR /work
ENTRYPOINT ["xamt"]
CMD ["fuzz", "--out", "/work/xamt-out"]
