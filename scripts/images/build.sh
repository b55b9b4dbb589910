#!/usr/bin/env bash
# Build the images this repository defines from local parts only, with no Docker daemon and no
# registry: the service images of services/Containerfile (access-guard, reconcile-trigger,
# dashboard), the workspace image of deploy/workspace/Containerfile (workspace), and the image of
# the Pulumi Kubernetes Operator (operator) the real node runs the workspace with.
#
#   scripts/images/build.sh [IMAGE...]     # default: all seven; prints "IMAGE ARCHIVE REFERENCE" lines
#
# Each image is three layers, each made by umoci from a directory tree:
#   1. a Debian rootfs (debootstrap --variant=minbase, Python and ca-certificates from Debian's
#      packages), shared by every image;
#   2. a virtual environment with requirements.lock installed, every file checked against its
#      hash, wheels only, from a wheelhouse `pip download` filled (the build itself reaches no
#      index); the same command line as the Containerfiles';
#   3. this repository's package, installed with no dependency resolution, as in the Containerfiles;
#      for the workspace also the Pulumi CLI, its Python scripts and the Kubernetes provider
#      plugin from the test toolchain (scripts/toolchain/build.sh).
# The operator image is one layer instead: the manager and the agent from the toolchain, tini as PID 1
# (Debian's tini-static) and busybox (Debian's busybox-static) for the `sh`, `cp` and `ln` of the
# workspace pod's init containers: what upstream's Dockerfile puts in its distroless debug image.
# Two images run what KubeAI runs on the real node, both from the toolchain: kubeai, KubeAI's
# controller alone in one layer (a static Go binary at /app/manager, as upstream's distroless image
# holds it), and
# ollama, the Debian rootfs plus Ollama's server and CLI at /bin/ollama (its CPU engine links
# glibc and libstdc++, and KubeAI's startup probe runs `bash -c "/bin/ollama cp ..."`).
# The image is tagged with the digest of its manifest (localhost/magicstick/IMAGE:<sha256 hex>)
# and written as an OCI archive that `ctr -n k8s.io images import` takes.
#
# Cache: ${MAGICSTICK_IMAGE_CACHE:-$HOME/.cache/magicstick/images}: the rootfs (keyed by suite,
# mirror and packages), the wheelhouse (keyed by requirements.lock) and each image (keyed by
# everything that goes into it). An image whose inputs have not changed is not built again.
# Needs root (debootstrap and chroot), debootstrap, umoci, python3 with pip, tar and sha256sum;
# for the workspace image, the toolchain's pulumi and provider. Installs no system package.
set -euo pipefail

SCRIPT_DIR=$(cd "${BASH_SOURCE[0]%/*}" && pwd)
REPOSITORY=$(cd "$SCRIPT_DIR/../.." && pwd)
readonly SCRIPT_DIR REPOSITORY
# shellcheck source=../toolchain/versions.env
source "$REPOSITORY/scripts/toolchain/versions.env"

CACHE=${MAGICSTICK_IMAGE_CACHE:-$HOME/.cache/magicstick/images}
TOOLCHAIN=${MAGICSTICK_TOOLCHAIN_CACHE:-$HOME/.cache/magicstick/toolchain}
readonly SUITE=bookworm
readonly MIRROR=${MAGICSTICK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
readonly PACKAGES=python3,python3-venv,ca-certificates
# The interpreter of the lock (its header) and of Debian bookworm's python3.
readonly PYTHON_VERSION=3.11
readonly REPOSITORY_NAME=localhost/magicstick
# What each Containerfile copies of the project (the workspace adds Pulumi.yaml and __main__.py).
readonly PROJECT_PACKAGES=(api catalogs planning components providers program cli services)
readonly PROJECT_FILES=(pyproject.toml README.md)
readonly WORKSPACE_FILES=(Pulumi.yaml __main__.py)
# The container port each service listens on (services/Containerfile's PORT).
declare -rA SERVICE_PORT=([access-guard]=8080 [reconcile-trigger]=8081 [dashboard]=8080)
readonly SERVICE_USER=65532:65532

log() { printf 'build-images: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

for command in debootstrap umoci python3 tar sha256sum chroot; do
    command -v "$command" >/dev/null || die "missing command: $command (from Debian's packages debootstrap, umoci, python3-pip, coreutils, tar)"
done
readonly TINI=/usr/bin/tini-static BUSYBOX=/bin/busybox
readonly BUSYBOX_APPLETS=(sh cp ln ls cat mkdir rm sleep env)
readonly OPERATOR_USER=65532:65532
((EUID == 0)) || die "needs root: debootstrap makes the rootfs and the locked packages are installed in it with chroot"

mkdir -p "$CACHE"
exec {lock_fd}>"$CACHE/build.lock"
flock "$lock_fd"

key_of() { sha256sum | cut -c1-16; }

# 1. The Debian rootfs, as a tar of numeric owners. Without the package cache and lists.
base_rootfs() {
    local key archive
    key=$(printf '%s\n' "$SUITE" "$MIRROR" "$PACKAGES" | key_of)
    archive=$CACHE/rootfs-$SUITE-$key.tar
    if [[ ! -f $archive ]]; then
        local directory=$CACHE/rootfs-$SUITE-$key.partial
        rm -rf "$directory"
        log "debootstrap $SUITE ($PACKAGES) from $MIRROR (about two minutes)"
        debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$directory" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
            die "debootstrap failed; see $CACHE/debootstrap.log"
        rm -rf "$directory"/var/cache/apt/archives/*.deb "$directory"/var/lib/apt/lists/* "$directory"/var/log/*.log
        tar --numeric-owner -C "$directory" -cf "$archive.partial" .
        mv "$archive.partial" "$archive"
        rm -rf "$directory"
    fi
    printf '%s\n' "$archive"
}

# 2. The wheels of requirements.lock for CPython 3.11 on Debian bookworm's glibc (2.36).
wheelhouse() {
    local key directory platforms=()
    key=$(key_of <"$REPOSITORY/requirements.lock")
    directory=$CACHE/wheels-$key
    if [[ ! -f $directory/.complete ]]; then
        for platform in manylinux2014_x86_64 manylinux_2_17_x86_64 manylinux_2_24_x86_64 manylinux_2_27_x86_64 \
            manylinux_2_28_x86_64 manylinux_2_31_x86_64 manylinux_2_34_x86_64 manylinux_2_35_x86_64 manylinux_2_36_x86_64 linux_x86_64 any; do
            platforms+=(--platform "$platform")
        done
        log "pip download of requirements.lock into $directory"
        python3 -m pip download --quiet --disable-pip-version-check --require-hashes --only-binary=:all: --no-deps \
            --python-version "$PYTHON_VERSION" --implementation cp --abi "cp${PYTHON_VERSION/./}" --abi abi3 --abi none "${platforms[@]}" \
            -r "$REPOSITORY/requirements.lock" -d "$directory" >&2 || die "pip download of requirements.lock failed"
        touch "$directory/.complete"
    fi
    printf '%s\n' "$directory"
}

# The project's files as the Containerfiles copy them, hashed: a change rebuilds the image.
project_key() {
    (cd "$REPOSITORY" && find "${PROJECT_PACKAGES[@]}" "${PROJECT_FILES[@]}" "${WORKSPACE_FILES[@]}" requirements.lock \
        -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | key_of
}

# In the rootfs: a venv at $1 with the locked set from the wheelhouse mounted at /wheels.
install_locked() {
    local rootfs=$1 venv=$2 wheels=$3
    mkdir -p "$rootfs/wheels"
    cp "$wheels"/*.whl "$rootfs/wheels/"
    cp "$REPOSITORY/requirements.lock" "$rootfs/tmp/requirements.lock"
    chroot "$rootfs" /usr/bin/env -i PATH=/usr/bin:/bin PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore \
        PIP_NO_INDEX=1 PIP_FIND_LINKS=/wheels /bin/sh -c \
        "python3 -m venv '$venv' && '$venv/bin/pip' install --quiet --require-hashes --only-binary=:all: -r /tmp/requirements.lock" >&2 ||
        die "installing requirements.lock into $venv failed"
    rm -rf "$rootfs/wheels" "$rootfs/tmp/requirements.lock"
}

# In the rootfs: the project into the venv at $1 from a copy at /src, then the copy removed.
install_project() {
    local rootfs=$1 venv=$2
    mkdir -p "$rootfs/src"
    (cd "$REPOSITORY" && tar --exclude=__pycache__ --exclude='*.pyc' -cf - "${PROJECT_FILES[@]}" "${PROJECT_PACKAGES[@]}") | tar -C "$rootfs/src" -xf -
    chroot "$rootfs" /usr/bin/env -i PATH=/usr/bin:/bin PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore PIP_NO_INDEX=1 \
        /bin/sh -c "cd /src && '$venv/bin/pip' install --quiet --no-deps --no-build-isolation . && '$venv/bin/pip' check" >&2 ||
        die "installing the project into $venv failed"
    rm -rf "$rootfs/src"
}

# The workspace's project directory (/magicstick): Pulumi.yaml and __main__.py beside the venv.
install_workspace_files() {
    local rootfs=$1
    (cd "$REPOSITORY" && cp "${WORKSPACE_FILES[@]}" "${PROJECT_FILES[@]}" "$rootfs/magicstick/")
}

# The Pulumi CLI, the Python language host and the SDK's scripts beside it, and the provider plugin, from the toolchain.
install_pulumi() {
    local rootfs=$1 cli=$TOOLCHAIN/pulumi-$PULUMI_VERSION plugins=$TOOLCHAIN/pulumi-home-$PULUMI_VERSION/plugins
    mkdir -p "$rootfs/usr/local/bin" "$rootfs/root/.pulumi"
    local tool
    for tool in pulumi pulumi-language-python-exec pulumi-resource-pulumi-python pulumi-language-python; do
        [[ -x $cli/$tool ]] || die "the workspace image needs the toolchain's $tool: run scripts/toolchain/build.sh"
        cp "$cli/$tool" "$rootfs/usr/local/bin/"
    done
    [[ -d $plugins ]] || die "the workspace image needs the toolchain's Kubernetes provider plugin: run scripts/toolchain/build.sh"
    cp -r "$plugins" "$rootfs/root/.pulumi/plugins"
}

# umoci repack of the bundle's rootfs as the next layer of TAG, keeping the bundle in step.
layer() {
    local layout=$1 bundle=$2 tag=$3 comment=$4
    umoci repack --refresh-bundle --history.created_by "$comment" --image "$layout:$tag" "$bundle" >&2
}

# An empty image `build` in the OCI layout $1/oci, unpacked into the bundle $1/bundle.
new_image() {
    local work=$1
    rm -rf "$work"
    mkdir -p "$work"
    umoci init --layout "$work/oci"
    umoci new --image "$work/oci:build"
    umoci unpack --image "$work/oci:build" "$work/bundle" >&2
}

# The Debian rootfs $2 (debootstrap's, cached) as the first layer of the image in $1.
debian_layer() {
    local work=$1 base=$2
    tar --numeric-owner -C "$work/bundle/rootfs" -xf "$base"
    layer "$work/oci" "$work/bundle" build "debootstrap --variant=minbase --include=$PACKAGES $SUITE"
}

build_image() {
    local image=$1 base=$2 wheels=$3 key=$4
    local directory=$CACHE/$image
    local work=$directory.work layout=$directory.work/oci bundle=$directory.work/bundle
    new_image "$work"
    debian_layer "$work" "$base"

    local venv config=()
    if [[ $image == workspace ]]; then
        venv=/magicstick/venv
        install_locked "$bundle/rootfs" "$venv" "$wheels"
        layer "$layout" "$bundle" build "pip install --require-hashes --only-binary=:all: -r requirements.lock"
        install_workspace_files "$bundle/rootfs"
        install_project "$bundle/rootfs" "$venv"
        install_pulumi "$bundle/rootfs"
        layer "$layout" "$bundle" build "the project at /magicstick; pulumi $PULUMI_VERSION and pulumi-kubernetes $PULUMI_KUBERNETES_VERSION"
        config=(--config.workingdir /magicstick
            --config.env PATH=/usr/local/bin:/usr/bin:/bin --config.env PYTHONUNBUFFERED=1 --config.env PIP_NO_CACHE_DIR=1
            --config.env PIP_DISABLE_PIP_VERSION_CHECK=1 --config.env PIP_ROOT_USER_ACTION=ignore --config.env PIP_NO_INDEX=1
            --config.env PULUMI_SKIP_UPDATE_CHECK=true --config.env PULUMI_SKIP_CHECKPOINTS=true
            --config.cmd /usr/local/bin/pulumi)
    else
        venv=/opt/magicstick/venv
        install_locked "$bundle/rootfs" "$venv" "$wheels"
        layer "$layout" "$bundle" build "pip install --require-hashes --only-binary=:all: -r requirements.lock"
        install_project "$bundle/rootfs" "$venv"
        [[ -x $bundle/rootfs$venv/bin/magicstick-$image ]] || die "pyproject.toml declares no console script magicstick-$image"
        ln -s "$venv/bin/magicstick-$image" "$bundle/rootfs/usr/local/bin/magicstick-service"
        chroot "$bundle/rootfs" /usr/local/bin/magicstick-service --help >/dev/null || die "magicstick-$image --help failed in the image"
        layer "$layout" "$bundle" build "the project in $venv; magicstick-service = magicstick-$image"
        config=(--config.workingdir / --config.user "$SERVICE_USER" --config.exposedports "${SERVICE_PORT[$image]}/tcp"
            --config.env PATH=/usr/local/bin:/usr/bin:/bin --config.env PYTHONUNBUFFERED=1 --config.env PYTHONDONTWRITEBYTECODE=1
            --config.entrypoint /usr/local/bin/magicstick-service)
    fi
    umoci config --image "$layout:build" --history.created_by "image configuration" "${config[@]}" >&2
    finish_image "$image" "$key"
}

# The image of $CACHE/<image>.work/oci tagged with its manifest's digest, as an OCI archive in
# $CACHE/<image>/ beside its reference and key; the bundle removed.
finish_image() {
    local image=$1 key=$2
    local directory=$CACHE/$image
    local work=$directory.work layout=$directory.work/oci bundle=$directory.work/bundle
    local digest
    digest=$(python3 -c 'import json,sys; index=json.load(open(sys.argv[1])); print(next(m["digest"] for m in index["manifests"] if m["annotations"]["org.opencontainers.image.ref.name"] == "build"))' "$layout/index.json")
    digest=${digest#sha256:}
    umoci tag --image "$layout:build" "$digest"
    umoci rm --image "$layout:build"
    umoci gc --layout "$layout"
    tar -C "$layout" -cf "$work/image.tar" .
    rm -rf "$layout"
    printf '%s\n' "$REPOSITORY_NAME/$image:$digest" >"$work/reference"
    printf '%s\n' "$key" >"$work/key"
    rm -rf "$bundle"
    rm -rf "$directory"
    mv "$work" "$directory"
}

# The operator image: /manager, /agent and /tini at the root, as upstream's image has them.
build_operator_image() {
    local key=$1 directory=$CACHE/operator pko=$TOOLCHAIN/pulumi-kubernetes-operator-$PKO_VERSION
    local work=$directory.work layout=$directory.work/oci bundle=$directory.work/bundle applet
    new_image "$work"
    mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs/tmp"
    chmod 1777 "$bundle/rootfs/tmp"
    cp "$pko/manager" "$pko/agent" "$bundle/rootfs/"
    cp "$TINI" "$bundle/rootfs/tini"
    cp "$BUSYBOX" "$bundle/rootfs/bin/busybox"
    for applet in "${BUSYBOX_APPLETS[@]}"; do ln -s busybox "$bundle/rootfs/bin/$applet"; done
    umoci repack --refresh-bundle --history.created_by "pulumi-kubernetes-operator $PKO_VERSION manager and agent, tini, busybox" --image "$layout:build" "$bundle" >&2
    umoci config --image "$layout:build" --history.created_by "image configuration" --config.workingdir / --config.user "$OPERATOR_USER" \
        --config.env PATH=/bin --config.entrypoint /tini --config.entrypoint=-- --config.cmd /manager >&2
    finish_image operator "$key"
}

operator_key() {
    local pko=$TOOLCHAIN/pulumi-kubernetes-operator-$PKO_VERSION
    [[ -x $pko/manager && -x $pko/agent ]] || die "the operator image needs the toolchain's pulumi-kubernetes-operator $PKO_VERSION: run scripts/toolchain/build.sh"
    [[ -x $TINI && -x $BUSYBOX ]] || die "the operator image needs Debian's tini ($TINI) and busybox-static ($BUSYBOX)"
    sha256sum "$pko/manager" "$pko/agent" "$TINI" "$BUSYBOX" "$SCRIPT_DIR/build.sh" | key_of
}

# KubeAI's controller at /app/manager, where upstream's image has it (the chart's `command`), /tmp
# for its writes, the nonroot user of upstream's image.
build_kubeai_image() {
    local key=$1 directory=$CACHE/kubeai
    local work=$directory.work layout=$directory.work/oci bundle=$directory.work/bundle
    new_image "$work"
    mkdir -p "$bundle/rootfs/tmp" "$bundle/rootfs/app"
    chmod 1777 "$bundle/rootfs/tmp"
    cp "$TOOLCHAIN/kubeai-$KUBEAI_VERSION/kubeai" "$bundle/rootfs/app/manager"
    umoci repack --refresh-bundle --history.created_by "kubeai $KUBEAI_VERSION controller" --image "$layout:build" "$bundle" >&2
    umoci config --image "$layout:build" --history.created_by "image configuration" --config.workingdir /app --config.user "$OPERATOR_USER" \
        --config.entrypoint /app/manager >&2
    finish_image kubeai "$key"
}

kubeai_key() {
    local binary=$TOOLCHAIN/kubeai-$KUBEAI_VERSION/kubeai
    [[ -x $binary ]] || die "the kubeai image needs the toolchain's kubeai $KUBEAI_VERSION: run scripts/toolchain/build.sh"
    sha256sum "$binary" "$SCRIPT_DIR/build.sh" | key_of
}

# Ollama: the Debian rootfs, then /bin/ollama; `ollama serve` as upstream's image runs it.
build_ollama_image() {
    local key=$1 base=$2 directory=$CACHE/ollama
    local work=$directory.work layout=$directory.work/oci bundle=$directory.work/bundle
    new_image "$work"
    debian_layer "$work" "$base"
    cp "$TOOLCHAIN/ollama-$OLLAMA_VERSION/ollama" "$bundle/rootfs/bin/ollama"
    chroot "$bundle/rootfs" /bin/ollama --version >/dev/null 2>&1 || die "ollama --version failed in the image (a library it links is missing?)"
    layer "$layout" "$bundle" build "ollama $OLLAMA_VERSION at /bin/ollama (CPU engine)"
    umoci config --image "$layout:build" --history.created_by "image configuration" --config.workingdir / \
        --config.env PATH=/usr/local/bin:/usr/bin:/bin --config.env OLLAMA_HOST=0.0.0.0:11434 --config.exposedports 11434/tcp \
        --config.entrypoint /bin/ollama --config.cmd serve >&2
    finish_image ollama "$key"
}

ollama_key() {
    local base=$1 binary=$TOOLCHAIN/ollama-$OLLAMA_VERSION/ollama
    [[ -x $binary ]] || die "the ollama image needs the toolchain's ollama $OLLAMA_VERSION: run scripts/toolchain/build.sh"
    { printf '%s\n' "$base"; sha256sum "$binary" "$SCRIPT_DIR/build.sh"; } | key_of
}

readonly ALL_IMAGES=(access-guard reconcile-trigger dashboard workspace operator kubeai ollama)
images=("$@")
((${#images[@]})) || images=("${ALL_IMAGES[@]}")
for image in "${images[@]}"; do
    [[ " ${ALL_IMAGES[*]} " == *" $image "* ]] || die "unknown image $image: one of ${ALL_IMAGES[*]}"
done

cached() {
    local image=$1 key=$2
    [[ -f $CACHE/$image/key && $(<"$CACHE/$image/key") == "$key" ]]
}

for image in "${images[@]}"; do
    started=$SECONDS
    if [[ $image == operator ]]; then
        key=$(operator_key)
        if cached operator "$key"; then log "operator: cached"; else log "operator: building"; build_operator_image "$key"; log "operator: built in $((SECONDS - started)) s"; fi
    elif [[ $image == kubeai ]]; then
        key=$(kubeai_key)
        if cached kubeai "$key"; then log "kubeai: cached"; else log "kubeai: building"; build_kubeai_image "$key"; log "kubeai: built in $((SECONDS - started)) s"; fi
    elif [[ $image == ollama ]]; then
        [[ -n ${rootfs:-} ]] || rootfs=$(base_rootfs)
        key=$(ollama_key "$rootfs")
        if cached ollama "$key"; then log "ollama: cached"; else log "ollama: building"; build_ollama_image "$key" "$rootfs"; log "ollama: built in $((SECONDS - started)) s"; fi
    else
        [[ -n ${base:-} ]] || { base=$(base_rootfs); wheels=$(wheelhouse); project=$(project_key); }
        key=$(printf '%s\n' "$base" "$wheels" "$project" "$image" "$PULUMI_VERSION" "$PULUMI_KUBERNETES_VERSION" "$(sha256sum <"$SCRIPT_DIR/build.sh")" | key_of)
        if cached "$image" "$key"; then
            log "$image: cached"
        else
            log "$image: building"
            build_image "$image" "$base" "$wheels" "$key"
            log "$image: built in $((SECONDS - started)) s"
        fi
    fi
    printf '%s %s %s\n' "$image" "$CACHE/$image/image.tar" "$(<"$CACHE/$image/reference")"
done
