# The all-in-one xamt image: the orchestrator and every library's env (numpy, torch,
# tensorflow, jax, paddle, mindspore, mxnet), each built in its own stage and copied in.
# `docker run xamt fuzz` fuzzes across all seven; any other xamt command works too.
#
# Build from the repository root:
#   docker build -t xamt .
#   docker build --build-arg VARIANT=cuda -t xamt:cuda .
# The stages are the same text as in images/<lib>/Dockerfile, so building one reuses the
# other's layers. Build arguments, local wheels and the CA-bundle secret: images/README.md.

ARG BASE_IMAGE=debian:bookworm-slim

# --- builder: Python 3.11 and every shared library an env needs to load (same in every xamt
# Dockerfile, so one build's layers serve the others) --------------------------------------
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

# --- orchestrator: xamt itself, in its own venv -------------------------------------------
FROM builder AS orchestrator
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
 && rm -rf /src

# --- the numpy env: `xamt env install` builds it from images/numpy/requirements-${VARIANT}.txt
# and writes its marker the way xamt does (after the library loaded in a worker). Local wheels
# (torch's CPU build is not on PyPI) come from the build context's wheels/ folder or a folder
# mounted at /mnt/wheels; folders that do not exist are skipped.
FROM orchestrator AS env-numpy
ARG VARIANT=cpu
ARG XAMT_FIND_LINKS=/ctx/wheels:/mnt/wheels
RUN --mount=type=bind,target=/ctx --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then \
        export PIP_CERT=/run/secrets/ca_bundle SSL_CERT_FILE=/run/secrets/ca_bundle; \
    fi \
 && xamt env install numpy --variant "${VARIANT}"

# --- the torch env: `xamt env install` builds it from images/torch/requirements-${VARIANT}.txt
# and writes its marker the way xamt does (after the library loaded in a worker). Local wheels
# (torch's CPU build is not on PyPI) come from the build context's wheels/ folder or a folder
# mounted at /mnt/wheels; folders that do not exist are skipped.
FROM orchestrator AS env-torch
ARG VARIANT=cpu
ARG XAMT_FIND_LINKS=/ctx/wheels:/mnt/wheels
RUN --mount=type=bind,target=/ctx --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then \
        export PIP_CERT=/run/secrets/ca_bundle SSL_CERT_FILE=/run/secrets/ca_bundle; \
    fi \
 && xamt env install torch --variant "${VARIANT}"

# --- the tensorflow env: `xamt env install` builds it from images/tensorflow/requirements-${VARIANT}.txt
# and writes its marker the way xamt does (after the library loaded in a worker). Local wheels
# (torch's CPU build is not on PyPI) come from the build context's wheels/ folder or a folder
# mounted at /mnt/wheels; folders that do not exist are skipped.
FROM orchestrator AS env-tensorflow
ARG VARIANT=cpu
ARG XAMT_FIND_LINKS=/ctx/wheels:/mnt/wheels
RUN --mount=type=bind,target=/ctx --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then \
        export PIP_CERT=/run/secrets/ca_bundle SSL_CERT_FILE=/run/secrets/ca_bundle; \
    fi \
 && xamt env install tensorflow --variant "${VARIANT}"

# --- the jax env: `xamt env install` builds it from images/jax/requirements-${VARIANT}.txt
# and writes its marker the way xamt does (after the library loaded in a worker). Local wheels
# (torch's CPU build is not on PyPI) come from the build context's wheels/ folder or a folder
# mounted at /mnt/wheels; folders that do not exist are skipped.
FROM orchestrator AS env-jax
ARG VARIANT=cpu
ARG XAMT_FIND_LINKS=/ctx/wheels:/mnt/wheels
RUN --mount=type=bind,target=/ctx --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then \
        export PIP_CERT=/run/secrets/ca_bundle SSL_CERT_FILE=/run/secrets/ca_bundle; \
    fi \
 && xamt env install jax --variant "${VARIANT}"

# --- the paddle env: `xamt env install` builds it from images/paddle/requirements-${VARIANT}.txt
# and writes its marker the way xamt does (after the library loaded in a worker). Local wheels
# (torch's CPU build is not on PyPI) come from the build context's wheels/ folder or a folder
# mounted at /mnt/wheels; folders that do not exist are skipped.
FROM orchestrator AS env-paddle
ARG VARIANT=cpu
ARG XAMT_FIND_LINKS=/ctx/wheels:/mnt/wheels
RUN --mount=type=bind,target=/ctx --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then \
        export PIP_CERT=/run/secrets/ca_bundle SSL_CERT_FILE=/run/secrets/ca_bundle; \
    fi \
 && xamt env install paddle --variant "${VARIANT}"

# --- the mindspore env: `xamt env install` builds it from images/mindspore/requirements-${VARIANT}.txt
# and writes its marker the way xamt does (after the library loaded in a worker). Local wheels
# (torch's CPU build is not on PyPI) come from the build context's wheels/ folder or a folder
# mounted at /mnt/wheels; folders that do not exist are skipped.
# The CPU env drops mindspore's GPU and Ascend plugins (~1.7 GB of the 2.6 GB env; the wheel
# ships them for every platform) and then proves, in a worker, that the CPU plugin runs an op.
FROM orchestrator AS env-mindspore
ARG VARIANT=cpu
ARG XAMT_FIND_LINKS=/ctx/wheels:/mnt/wheels
RUN --mount=type=bind,target=/ctx --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then \
        export PIP_CERT=/run/secrets/ca_bundle SSL_CERT_FILE=/run/secrets/ca_bundle; \
    fi \
 && xamt env install mindspore --variant "${VARIANT}" \
 && if [ "${VARIANT}" = cpu ]; then \
        plugin="${XAMT_HOME}/envs/mindspore-cpu/lib/python3.11/site-packages/mindspore/lib/plugin" \
     && rm -rf "${plugin}"/ascend "${plugin}"/gpu "${plugin}"/gpu11.1 "${plugin}"/gpu11.6 \
               "${plugin}"/libmindspore_ascend.so.* "${plugin}"/libmindspore_gpu.so.* \
               "${plugin}"/libmindspore_ops_ascend.so \
     && xamt call mindspore.ops.add -a 'randn(2,3):float32' -a 'randn(2,3):float32' \
            --json > /tmp/mindspore-check.json \
     && python3 -c 'import json, sys; sys.exit(any(o["status"] != "ok" for o in json.load(open(sys.argv[1]))))' \
            /tmp/mindspore-check.json \
     && rm /tmp/mindspore-check.json; \
    fi

# --- the mxnet env: `xamt env install` builds it from images/mxnet/requirements-${VARIANT}.txt
# and writes its marker the way xamt does (after the library loaded in a worker). Local wheels
# (torch's CPU build is not on PyPI) come from the build context's wheels/ folder or a folder
# mounted at /mnt/wheels; folders that do not exist are skipped.
FROM orchestrator AS env-mxnet
ARG VARIANT=cpu
ARG XAMT_FIND_LINKS=/ctx/wheels:/mnt/wheels
RUN --mount=type=bind,target=/ctx --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then \
        export PIP_CERT=/run/secrets/ca_bundle SSL_CERT_FILE=/run/secrets/ca_bundle; \
    fi \
 && xamt env install mxnet --variant "${VARIANT}"

# --- the image: a slim runtime with the orchestrator and the envs, as a non-root user -----
FROM ${BASE_IMAGE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG DEBIAN_FRONTEND=noninteractive
ARG VARIANT=cpu
ARG XAMT_VERSION=dev
ARG VCS_REF=unknown
ARG SOURCE_URL=https://github.com/xamt/xamt
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 libgomp1 libquadmath0 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 --user-group --shell /bin/bash xamt \
 && install -d -o xamt -g xamt /opt/xamt/catalog /opt/xamt/logs /work
COPY --from=orchestrator /opt/xamt/venv /opt/xamt/venv
COPY --from=env-numpy /opt/xamt/envs/ /opt/xamt/envs/
COPY --from=env-torch /opt/xamt/envs/ /opt/xamt/envs/
COPY --from=env-tensorflow /opt/xamt/envs/ /opt/xamt/envs/
COPY --from=env-jax /opt/xamt/envs/ /opt/xamt/envs/
COPY --from=env-paddle /opt/xamt/envs/ /opt/xamt/envs/
COPY --from=env-mindspore /opt/xamt/envs/ /opt/xamt/envs/
COPY --from=env-mxnet /opt/xamt/envs/ /opt/xamt/envs/
LABEL org.opencontainers.image.title="xamt" \
      org.opencontainers.image.description="xamt, the cross-framework differential fuzzer, with every library environment" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="${SOURCE_URL}" \
      org.opencontainers.image.url="${SOURCE_URL}" \
      org.opencontainers.image.documentation="${SOURCE_URL}#readme" \
      org.opencontainers.image.version="${XAMT_VERSION}" \
      org.opencontainers.image.revision="${VCS_REF}" \
      org.opencontainers.image.vendor="xamt" \
      org.opencontainers.image.base.name="${BASE_IMAGE}"
ENV XAMT_HOME=/opt/xamt \
    XAMT_VARIANT=${VARIANT} \
    PATH=/opt/xamt/venv/bin:${PATH} \
    PYTHONUNBUFFERED=1
USER 10001:10001
WORKDIR /work
ENTRYPOINT ["xamt"]
CMD ["fuzz", "--out", "/work/xamt-out"]
