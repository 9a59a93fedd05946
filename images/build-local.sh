#!/usr/bin/env bash
# Build the xamt images on a machine with no Docker engine and no reachable image registry,
# with podman, and prove the all-in-one image fuzzes across every library offline.
#
# Opt-in (it installs Debian packages and writes podman storage; run it as root):
#
#   bash images/build-local.sh                 # every per-library image, then the all-in-one
#   XAMT_IMAGES=all bash images/build-local.sh # only the all-in-one image
#   XAMT_IMAGES="numpy torch" bash images/build-local.sh
#
# What it does, and why:
#   1. apt-get installs podman, runc and mmdebstrap (uidmap for podman).
#   2. Writes a containers.conf (pointed to by CONTAINERS_CONF) with runtime = "runc" (crun
#      fails on hosts in cgroup hybrid mode) and default ulimits no higher than this shell's
#      hard limits (a container asking for more than the host allows fails to start).
#   3. Makes the base image offline: mmdebstrap --variant=minbase with Python 3.11 and the
#      shared libraries the environments need, from bookworm, bookworm-updates and
#      bookworm-security (so the image has Debian's security updates), then `podman import`
#      (no registry needed).
#   4. Builds the Dockerfile once per library (`--build-arg LIB=<lib>`) and then with no LIB
#      (the all-in-one image, which reuses the per-library env stages from the build cache),
#      with `podman build --network host --format docker` (pip, uv and apt reach their indexes;
#      the docker format keeps the Dockerfile's SHELL, which the OCI format drops). The host CA
#      bundle goes in as the read-only build secret "ca_bundle", for networks that intercept
#      HTTPS; the local wheel folder (torch's CPU wheel is not on PyPI) is mounted read-only at
#      /mnt/wheels, where the Dockerfile looks for wheels.
#   5. Runs a short campaign in the all-in-one image with `--network none` and checks that
#      findings.json names all seven libraries.
#
# Settings (environment variables):
#   XAMT_IMAGES      per-library images to build, or "all" for only the all-in-one
#                    (default: numpy torch tensorflow jax paddle mindspore mxnet, then all)
#   XAMT_VARIANT     cpu (default) or cuda
#   XAMT_WHEELS      local wheel folder (default /opt/wheels; skipped when missing)
#   XAMT_CA_BUNDLE   CA bundle given to the build (default /etc/ssl/certs/ca-certificates.crt)
#   XAMT_BUILD_DIR   work folder: containers.conf, base tarball, logs, smoke-test output
#                    (default /var/tmp/xamt-build)
#   DEBIAN_MIRROR    mirror for mmdebstrap (default http://deb.debian.org/debian)
#   XAMT_SMOKE_BUDGET  budget of the smoke campaign (default 60s)
#   XAMT_KEEP_CACHE  1 to keep the build cache (intermediate stages) for a faster next run;
#                    by default it is pruned at the end, leaving only the tagged images
#                    (about 15 GB for all eight CPU images)
#
#   XAMT_INSTALL_CONF  1 to also install the containers.conf as /etc/containers/containers.conf
#                    (where podman finds it in every shell); refused if a different file is
#                    there already
#   DEBIAN_SECURITY_MIRROR  security mirror for mmdebstrap
#                    (default http://deb.debian.org/debian-security)
#
# Running the images later, in another shell: the containers.conf this script writes is only
# exported (CONTAINERS_CONF) in its own shell. Without it, `podman run` asks for podman's
# default ulimits, which can exceed this host's hard limits, and fails with
# `error setting rlimit type 7: operation not permitted` (type 7 is RLIMIT_NOFILE). In a new
# shell, either export it again:
#   export CONTAINERS_CONF=/var/tmp/xamt-build/containers.conf   # $XAMT_BUILD_DIR/containers.conf
# or pass both ulimits to each run (the values the script prints at its end):
#   podman run --ulimit nofile=N:N --ulimit nproc=M:M ... localhost/xamt:cpu ...
# or run this script once with XAMT_INSTALL_CONF=1.
#
# Exit status: 0 when every image built and the smoke campaign named all seven libraries.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LIBS=(numpy torch tensorflow jax paddle mindspore mxnet)
VARIANT="${XAMT_VARIANT:-cpu}"
WHEELS="${XAMT_WHEELS:-/opt/wheels}"
CA_BUNDLE="${XAMT_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
WORK="${XAMT_BUILD_DIR:-/var/tmp/xamt-build}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
BUDGET="${XAMT_SMOKE_BUDGET:-60s}"
BASE="localhost/xamt-base:bookworm"
read -r -a WANT <<<"${XAMT_IMAGES:-${LIBS[*]} all}"

log() { printf '[build-local %(%H:%M:%S)T] %s\n' -1 "$*"; }
die() { log "FAILED: $*"; exit 1; }

[[ "$(id -u)" == 0 ]] || die "run as root (apt-get and rootful podman)"
case "$VARIANT" in cpu | cuda) ;; *) die "XAMT_VARIANT must be cpu or cuda, not $VARIANT" ;; esac
mkdir -p "$WORK/logs"

# -- 1. tools -----------------------------------------------------------------------------
if ! command -v podman >/dev/null || ! command -v runc >/dev/null \
    || ! command -v mmdebstrap >/dev/null; then
    log "installing podman, runc, mmdebstrap"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        podman runc mmdebstrap uidmap ca-certificates
fi

# -- 2. containers.conf -------------------------------------------------------------------
hard_nofile="$(ulimit -Hn)"
hard_nproc="$(ulimit -Hu)"
[[ "$hard_nofile" == unlimited ]] && hard_nofile=1048576
[[ "$hard_nproc" == unlimited || "$hard_nproc" -gt 32768 ]] && hard_nproc=32768
export CONTAINERS_CONF="$WORK/containers.conf"
cat >"$CONTAINERS_CONF" <<EOF
# Written by images/build-local.sh: runc (crun fails in cgroup hybrid mode) and ulimits within
# the host's hard limits (nofile $hard_nofile, nproc $hard_nproc).
[containers]
default_ulimits = ["nofile=$hard_nofile:$hard_nofile", "nproc=$hard_nproc:$hard_nproc"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
log "containers.conf: $CONTAINERS_CONF (nofile $hard_nofile, nproc $hard_nproc)"
if [[ "${XAMT_INSTALL_CONF:-0}" == 1 ]]; then
    system_conf=/etc/containers/containers.conf
    if [[ -e "$system_conf" ]] && ! cmp -s "$system_conf" "$CONTAINERS_CONF" \
        && ! head -n 1 "$system_conf" | grep -q '^# Written by images/build-local.sh'; then
        die "$system_conf exists and was not written by this script: merge $CONTAINERS_CONF into it by hand"
    fi
    install -D -m 0644 "$CONTAINERS_CONF" "$system_conf"
    log "installed it as $system_conf: podman uses it in every shell"
fi

# -- 3. base image ------------------------------------------------------------------------
if podman image exists "$BASE"; then
    log "base image $BASE exists"
else
    log "making the base image with mmdebstrap (bookworm with its updates and security suites, minbase)"
    started=$SECONDS
    # One sources line per suite: the point release, its updates, and the security archive, so
    # the base (and every apt-get in the Dockerfile) gets Debian's security fixes.
    mmdebstrap --variant=minbase \
        --include=python3-minimal,python3,python3-venv,ca-certificates,libgomp1,libquadmath0 \
        bookworm "$WORK/base.tar" \
        "deb $MIRROR bookworm main" \
        "deb $MIRROR bookworm-updates main" \
        "deb $SECURITY_MIRROR bookworm-security main" \
        >"$WORK/logs/mmdebstrap.log" 2>&1 \
        || die "mmdebstrap (log: $WORK/logs/mmdebstrap.log)"
    podman import --quiet "$WORK/base.tar" "$BASE" >/dev/null
    rm -f "$WORK/base.tar"
    log "base image $BASE made in $((SECONDS - started)) s"
fi

# -- 4. images ----------------------------------------------------------------------------
# A snapshot of the checkout (tracked and untracked, not ignored files) is the build context,
# so edits made while the images build neither break one build nor invalidate the cache of the
# next.
context="$ROOT"
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    context="$WORK/context"
    rm -rf "$context" && mkdir -p "$context"
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard \
        | tar --null --files-from=- --ignore-failed-read -cf -) | tar -xf - -C "$context"
fi
build_args=(--network host --format docker --build-arg "BASE_IMAGE=$BASE" --build-arg "VARIANT=$VARIANT"
    --build-arg "VCS_REF=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)")
if [[ -s "$CA_BUNDLE" ]]; then
    build_args+=(--secret "id=ca_bundle,src=$CA_BUNDLE")
fi
if [[ -d "$WHEELS" ]]; then
    build_args+=(--volume "$WHEELS:/mnt/wheels:ro")
fi

declare -A SECONDS_TAKEN=()
build() {  # build NAME LIB TAG: the Dockerfile with --build-arg LIB=LIB ("" for every library)
    local name=$1 lib=$2 tag=$3 started=$SECONDS
    log "building $tag (LIB=${lib:-<all>}; log: $WORK/logs/build-$name.log)"
    if ! podman build "${build_args[@]}" --build-arg "LIB=$lib" -f "$context/Dockerfile" \
        -t "$tag" "$context" >"$WORK/logs/build-$name.log" 2>&1; then
        tail -n 30 "$WORK/logs/build-$name.log" >&2
        die "building $tag (log: $WORK/logs/build-$name.log)"
    fi
    SECONDS_TAKEN[$name]=$((SECONDS - started))
    log "built $tag in ${SECONDS_TAKEN[$name]} s; disk: $(df -h --output=used,avail / | tail -1)"
}

for name in "${WANT[@]}"; do
    if [[ "$name" == all ]]; then
        build all "" "localhost/xamt:$VARIANT"
    else
        [[ -f "$context/images/$name/requirements-$VARIANT.txt" ]] \
            || die "no images/$name/requirements-$VARIANT.txt: not a library xamt knows"
        build "$name" "$name" "localhost/xamt-$name:$VARIANT"
        podman run --rm --network none "localhost/xamt-$name:$VARIANT" env list \
            >"$WORK/logs/env-list-$name.log" 2>&1 \
            || die "xamt env list in xamt-$name (log: $WORK/logs/env-list-$name.log)"
    fi
done

if [[ "${XAMT_KEEP_CACHE:-0}" != 1 ]]; then
    podman image prune --force >/dev/null
fi
log "images (podman storage $(du -sh "$(podman info --format '{{.Store.GraphRoot}}')" | cut -f1)):"
podman image ls --filter reference='localhost/xamt*' \
    --format '{{.Repository}}:{{.Tag}} {{.Size}}' | sed 's/^/    /'
for name in "${!SECONDS_TAKEN[@]}"; do
    printf '    build time %-11s %5d s\n' "$name" "${SECONDS_TAKEN[$name]}"
done

# -- 5. smoke campaign in the all-in-one image --------------------------------------------
if [[ " ${WANT[*]} " == *" all "* ]]; then
    out="$WORK/smoke-out"
    rm -rf "$out" && mkdir -p "$out" && chown 10001:10001 "$out"
    log "smoke campaign: xamt fuzz --budget $BUDGET in localhost/xamt:$VARIANT, --network none"
    started=$SECONDS
    podman run --rm --network none -v "$out:/work/xamt-out" "localhost/xamt:$VARIANT" \
        fuzz --budget "$BUDGET" --reproduce 1 --out /work/xamt-out \
        >"$WORK/logs/smoke.log" 2>&1 || die "smoke campaign (log: $WORK/logs/smoke.log)"
    python3 - "$out/findings.json" "${LIBS[@]}" <<'EOF' || die "smoke findings.json"
import json
import sys

doc = json.load(open(sys.argv[1]))
want = set(sys.argv[2:])
have = set(doc["libraries"])
print(f"    findings.json: schema {doc['schema']}, libraries {sorted(have)}, "
      f"{doc['campaign']['cases']} cases, {len(doc['findings'])} findings")
sys.exit(0 if want <= have else f"libraries missing from findings.json: {sorted(want - have)}")
EOF
    log "smoke campaign passed in $((SECONDS - started)) s"
fi
log "done"
if [[ "${XAMT_INSTALL_CONF:-0}" != 1 ]]; then
    cat <<EOF
To run the images from another shell, podman needs this script's containers.conf: without it
\`podman run\` fails with "error setting rlimit type 7: operation not permitted". Either
    export CONTAINERS_CONF=$CONTAINERS_CONF
or pass both ulimits to each run:
    podman run --ulimit nofile=$hard_nofile:$hard_nofile --ulimit nproc=$hard_nproc:$hard_nproc --rm localhost/xamt:$VARIANT env list
or run this script again with XAMT_INSTALL_CONF=1 to install it as /etc/containers/containers.conf.
EOF
fi
