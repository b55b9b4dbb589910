#!/usr/bin/env bash
# Set up what the browser suite (tests/browser, marker `browser`) needs: Debian's chromium at
# /usr/bin/chromium, and axe-core from the npm registry at the version pinned in
# scripts/browser/versions.env. Playwright itself is a Python package of the `test` extra; it
# drives this chromium through `executable_path` and never downloads a browser.
#
# Chromium: checked, never installed. Like every script here it installs no system package and
#   asks for no root: when /usr/bin/chromium is missing it stops and names the Debian package to
#   install (.ci/run installs it on a new CI machine before it runs the tests).
# axe-core: installed into a cache OUTSIDE the repository, one directory per version:
#   ${MAGICSTICK_BROWSER_CACHE:-$HOME/.cache/magicstick/browser}/axe-core-<version>/
#   with `npm install --prefix`, into a scratch directory moved into place only once its
#   version and its integrity (the lockfile's, checked by npm against the download) are the
#   pinned ones, so a half-done install is never taken for a done one.
# Idempotent: what is present and answers as pinned is not installed again (a second run takes
#   about a second). One setup per cache: the script holds setup.lock there (flock).
# Talks on stderr, in lines prefixed `browser-setup:`; a failure names the step, the exit status,
#   what failed and the log (setup.log in the cache). Prints only the two paths on stdout:
#   chromium, then axe.min.js.
# Exit status: 0 present or installed, 127 a required command is missing, 1 chromium is missing,
#   else the failed command's.
set -eEuo pipefail

SCRIPT_DIR=$(cd "${BASH_SOURCE[0]%/*}" && pwd)
readonly SCRIPT_DIR
# shellcheck source=versions.env
source "$SCRIPT_DIR/versions.env"
readonly STEP_COUNT=3
readonly CHROMIUM=/usr/bin/chromium
declare -rA PACKAGE_OF=([flock]=util-linux [npm]=npm [node]=nodejs [sha256sum]=coreutils [sed]=sed)

CACHE_DIR=${MAGICSTICK_BROWSER_CACHE:-$HOME/.cache/magicstick/browser}
STARTED=${EPOCHREALTIME/[.,]/}
CURRENT_STEP="checking the required commands"
FAILED_COMMAND=""
REPORTED=""
LOG=""
SCRATCH=""
LOCK_FD=""

log() { printf 'browser-setup: %s\n' "$*" >&2; }

elapsed_seconds() { printf '%d' $(((${EPOCHREALTIME/[.,]/} - STARTED) / 1000000)); }

step() {
    local number=$1 title=$2 detail=${3:-} elapsed
    elapsed=$(elapsed_seconds)
    CURRENT_STEP=$title
    log "[$number/$STEP_COUNT] $title${detail:+: $detail}$( ((elapsed == 0)) || printf ' (at %d s)' "$elapsed")"
}

fail() {
    local status=$1 what=$2 excerpt=${3:-}
    ((status != 0)) || status=1
    REPORTED=1
    log "step '$CURRENT_STEP' failed (exit $status): $what$([[ ! -s $LOG ]] || printf "; see %s" "$LOG")"
    [[ -z $excerpt ]] || printf '%s\n' "$excerpt" | sed 's/^/    /' >&2
    exit "$status"
}

on_exit() {
    local status=$?
    [[ -z $SCRATCH ]] || rm -rf "$SCRATCH"
    if ((status != 0)) && [[ -z $REPORTED ]]; then
        log "step '$CURRENT_STEP' failed (exit $status): ${FAILED_COMMAND:-interrupted}$([[ ! -s $LOG ]] || printf "; see %s" "$LOG")"
    fi
}
trap '[[ -n $FAILED_COMMAND ]] || FAILED_COMMAND="\`$BASH_COMMAND\` (line $LINENO)"' ERR
trap on_exit EXIT

require_commands() {
    local command missing=()
    for command in "$@"; do
        command -v "$command" >/dev/null 2>&1 || missing+=("$command (Debian package ${PACKAGE_OF[$command]:-unknown})")
    done
    ((${#missing[@]} == 0)) || fail 127 "missing: ${missing[*]}"
}

# Runs one command with its output in the log; a failure stops the setup saying `what` failed,
# followed by the last lines the command printed.
run() {
    local what=$1 status=0 logged
    shift
    logged=$(wc -c <"$LOG")
    "$@" </dev/null >>"$LOG" 2>&1 {LOCK_FD}>&- || status=$?
    ((status == 0)) || fail "$status" "$what" "$(tail -c "+$((logged + 1))" "$LOG" | tail -n 8)"
}

lock_cache() {
    CURRENT_STEP="locking the cache"
    mkdir -p "$CACHE_DIR" 2>/dev/null || fail $? "cannot create the cache directory $CACHE_DIR"
    CACHE_DIR=$(cd "$CACHE_DIR" && pwd)
    local lock_file=$CACHE_DIR/setup.lock
    { exec {LOCK_FD}>>"$lock_file"; } 2>/dev/null || fail $? "cannot open the lock file $lock_file"
    if ! flock -n "$LOCK_FD"; then
        log "waiting for another setup (lock $lock_file)"
        flock "$LOCK_FD" || fail $? "cannot take the lock $lock_file"
    fi
    LOG=$CACHE_DIR/setup.log
    : >"$LOG"
}

# The version chromium answers with ("Chromium 156.0.8078.114 built on Debian ..."), or nothing.
chromium_version() {
    local output
    [[ -x $CHROMIUM ]] && output=$("$CHROMIUM" --version 2>/dev/null {LOCK_FD}>&-) && [[ $output == Chromium\ * ]] &&
        printf '%s' "${output%% built on*}"
}

ensure_chromium() {
    local version
    step 2 "chromium" "Debian's package $CHROMIUM_PACKAGE at $CHROMIUM"
    if version=$(chromium_version); then
        log "already installed: $version ($CHROMIUM)"
        return
    fi
    fail 1 "$CHROMIUM is missing: install Debian's package $CHROMIUM_PACKAGE (as root, with the system's package manager), then run $0 again"
}

# The field `name` of the lockfile's entry for node_modules/axe-core, or nothing.
locked() {
    local lockfile=$1 name=$2
    node -e '
        const entry = require(process.argv[1]).packages["node_modules/axe-core"] || {};
        process.stdout.write(String(entry[process.argv[2]] || ""));
    ' "$lockfile" "$name" 2>/dev/null
}

# Present means: axe.min.js exists, the package says the pinned version, and the file's sha256 is
# the one recorded when it was installed.
axe_core_present() {
    local directory=$1 script=$1/node_modules/axe-core/axe.min.js stamp=$1/axe-core.stamp
    [[ -f $script && -f $stamp ]] || return 1
    [[ $(locked "$directory/package-lock.json" version) == "$AXE_CORE_VERSION" ]] || return 1
    grep -qx "sha256=$(sha256sum "$script" | cut -d' ' -f1)" "$stamp"
}

ensure_axe_core() {
    local directory=$CACHE_DIR/axe-core-$AXE_CORE_VERSION
    local script=$directory/node_modules/axe-core/axe.min.js
    step 3 "axe-core $AXE_CORE_VERSION" "npm registry $(npm config get registry 2>/dev/null {LOCK_FD}>&-), into $directory"
    if axe_core_present "$directory"; then
        log "already installed: $script"
        AXE_CORE=$script
        return
    fi
    SCRATCH=$(mktemp -d "$CACHE_DIR/.axe-core-$AXE_CORE_VERSION.XXXXXX")
    chmod 0755 "$SCRATCH"
    run "npm could not install axe-core@$AXE_CORE_VERSION" npm install --prefix "$SCRATCH" --no-audit --no-fund \
        --no-update-notifier --ignore-scripts --save-exact "axe-core@$AXE_CORE_VERSION"
    local version integrity
    version=$(locked "$SCRATCH/package-lock.json" version)
    integrity=$(locked "$SCRATCH/package-lock.json" integrity)
    [[ $version == "$AXE_CORE_VERSION" ]] || fail 1 "npm installed axe-core ${version:-(none)}, not the pinned $AXE_CORE_VERSION"
    [[ $integrity == "$AXE_CORE_INTEGRITY" ]] ||
        fail 1 "axe-core $AXE_CORE_VERSION has the integrity ${integrity:-(none)}, not the pinned $AXE_CORE_INTEGRITY"
    [[ -f $SCRATCH/node_modules/axe-core/axe.min.js ]] || fail 1 "the package axe-core $AXE_CORE_VERSION has no axe.min.js"
    {
        printf 'version=%s\n' "$AXE_CORE_VERSION"
        printf 'integrity=%s\n' "$integrity"
        printf 'sha256=%s\n' "$(sha256sum "$SCRATCH/node_modules/axe-core/axe.min.js" | cut -d' ' -f1)"
        printf 'npm=%s\n' "$(npm --version 2>/dev/null {LOCK_FD}>&-)"
        printf 'installed=%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    } >"$SCRATCH/axe-core.stamp"
    rm -rf "$directory"
    mv "$SCRATCH" "$directory"
    SCRATCH=""
    log "installed: $script"
    AXE_CORE=$script
}

main() {
    require_commands flock npm node sha256sum sed
    lock_cache
    step 1 "checking the cache" "$CACHE_DIR"
    ensure_chromium
    ensure_axe_core
    log "done in $(elapsed_seconds) s"
    printf '%s\n' "$CHROMIUM" "$AXE_CORE"
}

AXE_CORE=""
main "$@"
