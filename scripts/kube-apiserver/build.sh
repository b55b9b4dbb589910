#!/usr/bin/env bash
# Build the real kube-apiserver the cluster tests run against, from Debian bookworm's own
# `kubernetes` source package, and make sure Debian's etcd-server is installed.
#
# Installs into a cache OUTSIDE the repository (never commit the binary, it is ~110 MB):
#   ${MAGICSTICK_KUBE_CACHE:-$HOME/.cache/magicstick/kube-apiserver-v1.20.2}/kube-apiserver
# Idempotent: when the cached binary answers --version, it exits at once.
# One build per cache: a build holds build.lock in the cache directory (flock); another one
#   waits for it, then finds the binary it built.
# Talks on stderr: one line per step ("[4/7] fetching ..."); a failure names the step, the
#   exit status and what failed. Command output goes to build.log in the cache directory.
# Prints only the binary's path on stdout. Exit status: 0 built or cached, 127 a required
#   command is missing, else the status of the command that failed.
# Unattended: no stdin, apt-get -y; needs root (or sudo) only for apt-get.
# What each step works around is written beside it; scripts/kube-apiserver/README.md has the rest.
set -eEuo pipefail

readonly KUBE_VERSION=v1.20.2
readonly SOURCE_PACKAGE=kubernetes
readonly DEB_SRC_LINE='deb-src http://deb.debian.org/debian bookworm main'
readonly BUILD_PACKAGES=(golang-go golang-github-modern-go-reflect2-dev jq rsync make)
readonly RUNTIME_PACKAGES=(etcd-server)
readonly REFLECT2_SOURCE=/usr/share/gocode/src/github.com/modern-go/reflect2
readonly STEP_COUNT=7
declare -rA PACKAGE_OF=(
    [apt-cache]=apt [apt-get]=apt [dpkg-query]=dpkg [flock]=util-linux [go]=golang-go [make]=make
    [rsync]=rsync [sha256sum]=coreutils [sudo]=sudo [tar]=tar
)

CACHE_DIR=${MAGICSTICK_KUBE_CACHE:-$HOME/.cache/magicstick/kube-apiserver-$KUBE_VERSION}
STARTED=${EPOCHREALTIME/[.,]/}
CURRENT_STEP="checking the required commands"
FAILED_COMMAND=""
REPORTED=""
LOG=""
WORK=""
LOCK_FD=""  # the descriptor holding build.lock, chosen by bash in lock_cache

export DEBIAN_FRONTEND=noninteractive

log() { printf 'build-kube-apiserver: %s\n' "$*" >&2; }

elapsed_seconds() { printf '%d' $(((${EPOCHREALTIME/[.,]/} - STARTED) / 1000000)); }

# Announces step `number`: its `title` (what a failure names) and an optional `detail`.
step() {
    local number=$1 title=$2 detail=${3:-} elapsed
    elapsed=$(elapsed_seconds)
    CURRENT_STEP=$title
    log "[$number/$STEP_COUNT] $title${detail:+: $detail}$( ((elapsed == 0)) || printf ' (at %d s)' "$elapsed")"
}

# Stops the build, naming the step, the exit status, what failed and the log; `excerpt`
# (optional, several lines) is printed below, indented.
fail() {
    local status=$1 what=$2 excerpt=${3:-}
    ((status != 0)) || status=1
    REPORTED=1
    log "step '$CURRENT_STEP' failed (exit $status): $what${LOG:+; see $LOG}"
    [[ -z $excerpt ]] || printf '%s\n' "$excerpt" | sed 's/^/    /' >&2
    exit "$status"
}

# The backstop for a failure no step explains: the step, the status and the command.
on_exit() {
    local status=$?
    [[ -z $WORK ]] || rm -rf "$WORK"
    if ((status != 0)) && [[ -z $REPORTED ]]; then
        log "step '$CURRENT_STEP' failed (exit $status): ${FAILED_COMMAND:-interrupted}${LOG:+; see $LOG}"
    fi
}
trap '[[ -n $FAILED_COMMAND ]] || FAILED_COMMAND="\`$BASH_COMMAND\` (line $LINENO)"' ERR
trap on_exit EXIT

require_commands() {
    local command missing=()
    for command in "$@"; do
        command -v "$command" >/dev/null 2>&1 || missing+=("$command (Debian package ${PACKAGE_OF[$command]:-unknown})")
    done
    case ${#missing[@]} in
        0) ;;
        1) fail 127 "missing command ${missing[0]}" ;;
        *) fail 127 "missing commands $(join ', ' "${missing[@]}")" ;;
    esac
}

join() {
    local separator=$1 first=$2
    shift 2
    printf '%s' "$first" "${@/#/$separator}"
}

# Runs one command with its output in the log and without the lock's descriptor (a daemon
# that a package's postinst starts must not hold the lock); a failure stops the build
# saying `what` failed, followed by the last lines the command printed.
run() {
    local what=$1 status=0 logged
    shift
    logged=$(wc -c <"$LOG")
    "$@" </dev/null >>"$LOG" 2>&1 {LOCK_FD}>&- || status=$?
    ((status == 0)) || fail "$status" "$what" "$(tail -c "+$((logged + 1))" "$LOG" | tail -n 5)"
}

as_root() {
    if [[ $EUID -eq 0 ]]; then "$@"; else sudo -n "$@"; fi
}

missing_packages() {
    local package
    for package in "$@"; do
        [[ $(dpkg-query -W -f='${Status}' "$package" 2>/dev/null) == "install ok installed" ]] || printf '%s\n' "$package"
    done
}

# Installs the packages that are not installed yet; refreshes the apt lists only when needed.
ensure_packages() {
    local missing status=0
    mapfile -t missing < <(missing_packages "$@")
    ((${#missing[@]} > 0)) || return 0
    [[ $EUID -eq 0 ]] || require_commands sudo
    log "installing ${missing[*]} with apt-get"
    as_root apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null >>"$LOG" 2>&1 {LOCK_FD}>&- && return 0
    run "apt-get update failed" as_root apt-get update -q
    local logged
    logged=$(wc -c <"$LOG")
    as_root apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null >>"$LOG" 2>&1 {LOCK_FD}>&- || status=$?
    ((status == 0)) || fail "$status" "apt-get could not install $(missing_packages "${missing[@]}" | paste -sd' ')" \
        "$(tail -c "+$((logged + 1))" "$LOG" | grep -E '^(E|W): ' | tail -n 5 || true)"
}

cached_binary_works() {
    local version
    [[ -x $BINARY ]] && version=$("$BINARY" --version 2>/dev/null {LOCK_FD}>&-) && [[ $version == "Kubernetes $KUBE_VERSION" ]]
}

# Makes the cache directory absolute, takes its lock (waiting for a build that holds it)
# and starts a new log there.
lock_cache() {
    CURRENT_STEP="locking the cache"
    mkdir -p "$CACHE_DIR" 2>/dev/null || fail $? "cannot create the cache directory $CACHE_DIR"
    CACHE_DIR=$(cd "$CACHE_DIR" && pwd)
    BINARY=$CACHE_DIR/kube-apiserver
    STAMP=$CACHE_DIR/kube-apiserver.stamp
    local lock_file=$CACHE_DIR/build.lock
    { exec {LOCK_FD}>>"$lock_file"; } 2>/dev/null || fail $? "cannot open the lock file $lock_file"
    if ! flock -n "$LOCK_FD"; then
        log "waiting for another build (lock $lock_file)"
        flock "$LOCK_FD" || fail $? "cannot take the lock $lock_file"
    fi
    LOG=$CACHE_DIR/build.log
    : >"$LOG"
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
    run "apt-get update could not read the source index ($DEB_SRC_LINE)" apt-get "${apt_options[@]}" -q update
    run "apt-get source could not download $SOURCE_PACKAGE" \
        env -C "$work/src" apt-get "${apt_options[@]}" -q source --download-only "$SOURCE_PACKAGE"
    run "could not unpack the ${SOURCE_PACKAGE}_*.orig.tar.gz it downloaded" \
        tar -xzf "$work"/src/"$SOURCE_PACKAGE"_*.orig.tar.gz -C "$work/src"
    apt-cache "${apt_options[@]}" showsrc "$SOURCE_PACKAGE" | sed -n 's/^Version: //p' | head -n1 >"$work/source-version"
}

# The vendored modern-go/reflect2 1.0.1 faults under Go >= 1.18 on the first write to etcd;
# Debian's 1.0.2 is API-compatible and fixes it.
swap_reflect2() {
    local vendored=$1/vendor/github.com/modern-go/reflect2
    [[ -d $REFLECT2_SOURCE ]] || fail 1 "$REFLECT2_SOURCE is missing (Debian package golang-github-modern-go-reflect2-dev)"
    rm -rf "$vendored" && mkdir -p "$vendored"
    run "could not copy $REFLECT2_SOURCE into the source tree" \
        rsync -a --exclude='*_test.go' --exclude='.*' "$REFLECT2_SOURCE/" "$vendored/"
}

# GOPATH mode: `go build -mod=vendor` fails on this tree ("updates to go.mod needed").
# The version is pinned through a version file: the unpacked tarball is not a git tree.
build_apiserver() {
    local work=$1 source=$2 status=0
    mkdir -p "$work/gopath/src/k8s.io"
    ln -s "$source" "$work/gopath/src/k8s.io/kubernetes"
    cat >"$work/version-vars" <<VARS
KUBE_GIT_VERSION='$KUBE_VERSION'
KUBE_GIT_MAJOR='1'
KUBE_GIT_MINOR='20'
KUBE_GIT_TREE_STATE='archive'
KUBE_GIT_COMMIT=''
VARS
    env -C "$work/gopath/src/k8s.io/kubernetes" \
        GOPATH="$work/gopath" GOCACHE="$work/gocache" GOPROXY=off GOFLAGS= GO111MODULE=off \
        CGO_ENABLED=0 HOME="$work" KUBE_GIT_VERSION_FILE="$work/version-vars" \
        make WHAT=cmd/kube-apiserver </dev/null >>"$LOG" 2>&1 {LOCK_FD}>&- || status=$?
    ((status == 0)) || fail "$status" "make WHAT=cmd/kube-apiserver failed" "$(tail -n 40 "$LOG")"
}

install_binary() {
    local work=$1 source=$2
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
    cached_binary_works || fail 1 "the built binary does not answer --version with Kubernetes $KUBE_VERSION"
}

build() {
    step 3 "installing build packages" "${BUILD_PACKAGES[*]}"
    ensure_packages "${BUILD_PACKAGES[@]}"
    require_commands go make rsync tar apt-cache sha256sum
    step 4 "fetching the $SOURCE_PACKAGE source package"
    WORK=$(mktemp -d)
    fetch_source "$WORK"
    local source
    source=$(find "$WORK/src" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-1.*' | head -n1)
    [[ -n $source ]] || fail 1 "no kubernetes-1.* tree in the source package"
    step 5 "patching reflect2" "vendored 1.0.1 -> Debian's $(dpkg-query -W -f='${Version}' golang-github-modern-go-reflect2-dev)"
    swap_reflect2 "$source"
    step 6 "compiling kube-apiserver" "$(go version | cut -d' ' -f3), GOPATH mode, several minutes"
    build_apiserver "$WORK" "$source"
    step 7 "installing the binary" "$BINARY"
    install_binary "$WORK" "$source"
    log "built in $(elapsed_seconds) s: $BINARY (stamp: $STAMP)"
}

main() {
    require_commands flock dpkg-query apt-get
    lock_cache
    step 1 "installing runtime packages" "${RUNTIME_PACKAGES[*]}"
    ensure_packages "${RUNTIME_PACKAGES[@]}"
    step 2 "checking the cache" "$CACHE_DIR"
    if cached_binary_works; then
        log "already built: $BINARY"
    else
        build
    fi
    printf '%s\n' "$BINARY"
}

main "$@"
