#!/usr/bin/env bash
# Build the real kube-apiserver the cluster tests run against, from Debian bookworm's own
# `kubernetes` source package, and make sure Debian's etcd-server is installed.
#
# Installs into a cache OUTSIDE the repository (never commit the binary, it is ~110 MB):
#   ${MAGICSTICK_KUBE_CACHE:-$HOME/.cache/magicstick/kube-apiserver-v1.20.2}/kube-apiserver
# Idempotent: when the cached binary answers --version, it exits at once.
# Unattended: no stdin, apt-get -y; needs root (or sudo) only for apt-get.
# What each step works around is written beside it; scripts/kube-apiserver/README.md has the rest.
set -euo pipefail

readonly KUBE_VERSION=v1.20.2
readonly SOURCE_PACKAGE=kubernetes
readonly DEB_SRC_LINE='deb-src http://deb.debian.org/debian bookworm main'
readonly BUILD_PACKAGES=(golang-go golang-github-modern-go-reflect2-dev jq rsync make)
readonly RUNTIME_PACKAGES=(etcd-server)
readonly REFLECT2_SOURCE=/usr/share/gocode/src/github.com/modern-go/reflect2

CACHE_DIR=${MAGICSTICK_KUBE_CACHE:-$HOME/.cache/magicstick/kube-apiserver-$KUBE_VERSION}
BINARY=$CACHE_DIR/kube-apiserver
STAMP=$CACHE_DIR/kube-apiserver.stamp

export DEBIAN_FRONTEND=noninteractive

log() { printf 'build-kube-apiserver: %s\n' "$*" >&2; }

as_root() {
    if [[ $EUID -eq 0 ]]; then "$@"; else sudo -n "$@"; fi
}

missing_packages() {
    local package
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' \
            || printf '%s\n' "$package"
    done
}

# Installs the packages that are not installed yet; refreshes the apt lists only when needed.
ensure_packages() {
    local missing
    mapfile -t missing < <(missing_packages "$@")
    [[ ${#missing[@]} -eq 0 ]] && return 0
    log "installing ${missing[*]}"
    as_root apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null >/dev/null 2>&1 \
        || { as_root apt-get update -q </dev/null >/dev/null \
             && as_root apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null >/dev/null; }
}

cached_binary_works() {
    [[ -x $BINARY ]] && "$BINARY" --version 2>/dev/null | grep -qx "Kubernetes $KUBE_VERSION"
}

# Downloads and unpacks the source package with a private apt configuration, so that
# /etc/apt is left untouched (a deb-src line is needed that the machine may not have).
fetch_source() {
    local work=$1 apt_dir=$1/apt
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$work/src"
    chmod -R a+rX "$work"
    printf '%s\n' "$DEB_SRC_LINE" >"$apt_dir/sources.list"
    local apt_options=(
        -o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
        -o APT::Sandbox::User=root
    )
    apt-get "${apt_options[@]}" -q update </dev/null >/dev/null
    (cd "$work/src" && apt-get "${apt_options[@]}" -q source --download-only "$SOURCE_PACKAGE" </dev/null >/dev/null)
    tar -xzf "$work"/src/"$SOURCE_PACKAGE"_*.orig.tar.gz -C "$work/src"
    apt-cache "${apt_options[@]}" showsrc "$SOURCE_PACKAGE" | sed -n 's/^Version: //p' | head -n1 >"$work/source-version"
}

# The vendored modern-go/reflect2 1.0.1 faults under Go >= 1.18 on the first write to etcd;
# Debian's 1.0.2 is API-compatible and fixes it.
swap_reflect2() {
    local vendored=$1/vendor/github.com/modern-go/reflect2
    rm -rf "$vendored" && mkdir -p "$vendored"
    rsync -a --exclude='*_test.go' --exclude='.*' "$REFLECT2_SOURCE/" "$vendored/"
}

# GOPATH mode: `go build -mod=vendor` fails on this tree ("updates to go.mod needed").
# The version is pinned through a version file: the unpacked tarball is not a git tree.
build_apiserver() {
    local work=$1 source=$2
    mkdir -p "$work/gopath/src/k8s.io"
    ln -s "$source" "$work/gopath/src/k8s.io/kubernetes"
    cat >"$work/version-vars" <<VARS
KUBE_GIT_VERSION='$KUBE_VERSION'
KUBE_GIT_MAJOR='1'
KUBE_GIT_MINOR='20'
KUBE_GIT_TREE_STATE='archive'
KUBE_GIT_COMMIT=''
VARS
    log "compiling (GOPATH mode, $(go version | cut -d' ' -f3)); log: $work/build.log"
    if ! (cd "$work/gopath/src/k8s.io/kubernetes" \
          && env GOPATH="$work/gopath" GOCACHE="$work/gocache" GOPROXY=off GOFLAGS= GO111MODULE=off \
                 CGO_ENABLED=0 HOME="$work" KUBE_GIT_VERSION_FILE="$work/version-vars" \
                 make WHAT=cmd/kube-apiserver </dev/null >"$work/build.log" 2>&1); then
        tail -n 40 "$work/build.log" >&2
        return 1
    fi
}

install_binary() {
    local work=$1 source=$2
    mkdir -p "$CACHE_DIR"
    cp "$source/_output/bin/kube-apiserver" "$BINARY.partial"
    mv -f "$BINARY.partial" "$BINARY"
    {
        printf 'version=%s\n' "$KUBE_VERSION"
        printf 'source_package=%s %s\n' "$SOURCE_PACKAGE" "$(cat "$work/source-version")"
        printf 'go=%s\n' "$(go version | cut -d' ' -f3)"
        printf 'reflect2=%s\n' "$(dpkg-query -W -f='${Version}' golang-github-modern-go-reflect2-dev)"
        printf 'etcd=%s\n' "$(dpkg-query -W -f='${Version}' etcd-server)"
        printf 'sha256=%s\n' "$(sha256sum "$BINARY" | cut -d' ' -f1)"
        printf 'built=%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    } >"$STAMP"
}

main() {
    ensure_packages "${RUNTIME_PACKAGES[@]}"
    if cached_binary_works; then
        log "already built: $BINARY"
        printf '%s\n' "$BINARY"
        return 0
    fi
    ensure_packages "${BUILD_PACKAGES[@]}"
    local work started=$SECONDS
    work=$(mktemp -d)
    # shellcheck disable=SC2064  # expand now: the trap must remove this very directory
    trap "rm -rf '$work'" EXIT
    log "fetching the $SOURCE_PACKAGE source package"
    fetch_source "$work"
    local source
    source=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-1.*' | head -n1)
    [[ -n $source ]] || { log "no kubernetes-1.* tree in the source package"; return 1; }
    swap_reflect2 "$source"
    build_apiserver "$work" "$source"
    install_binary "$work" "$source"
    cached_binary_works || { log "built binary does not answer --version with $KUBE_VERSION"; return 1; }
    log "built in $((SECONDS - started)) s: $BINARY (stamp: $STAMP)"
    printf '%s\n' "$BINARY"
}

main "$@"
