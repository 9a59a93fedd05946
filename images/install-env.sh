#!/usr/bin/env bash
# Build one library's environment inside an image build: the env stages of the Dockerfile run
# `xamt-install-env LIB` (this script, installed by the orchestrator stage).
#
# `xamt env install LIB` builds the env from images/LIB/requirements-${XAMT_VARIANT}.txt and
# writes its marker the way xamt always does (after the library loaded in a worker). Local
# wheel folders come from XAMT_FIND_LINKS (the build context's wheels/ folder mounted at /ctx,
# or a folder mounted at /mnt/wheels; missing folders are skipped). The optional build secret
# "ca_bundle" (a PEM file) is trusted by pip and uv, for networks that intercept HTTPS.
#
# mindspore, CPU variant: the wheel ships its GPU and Ascend plugins for every platform (about
# 1.7 GB of the 2.6 GB env); they are dropped, and a worker then proves that the CPU plugin
# still runs an op.
set -euo pipefail

lib=${1:?usage: xamt-install-env LIB}
variant=${XAMT_VARIANT:?XAMT_VARIANT is not set}
if [[ -s /run/secrets/ca_bundle ]]; then
    export PIP_CERT=/run/secrets/ca_bundle SSL_CERT_FILE=/run/secrets/ca_bundle
fi

xamt env install "$lib" --variant "$variant"

if [[ "$lib" == mindspore && "$variant" == cpu ]]; then
    plugin="$XAMT_HOME/envs/mindspore-cpu/lib/python3.11/site-packages/mindspore/lib/plugin"
    rm -rf "$plugin"/ascend "$plugin"/gpu "$plugin"/gpu11.1 "$plugin"/gpu11.6 \
        "$plugin"/libmindspore_ascend.so.* "$plugin"/libmindspore_gpu.so.* \
        "$plugin"/libmindspore_ops_ascend.so
    check=$(mktemp)
    xamt call mindspore.ops.add -a 'randn(2,3):float32' -a 'randn(2,3):float32' --json >"$check"
    python3 - "$check" <<'EOF'
import json
import sys

doc = json.load(open(sys.argv[1]))
outcomes = doc["outcomes"] if isinstance(doc, dict) else doc
sys.exit(None if outcomes and all(o["status"] == "ok" for o in outcomes) else f"mindspore: {doc}")
EOF
    rm -f "$check"
fi
