#!/usr/bin/env bash
# Every suite, through the Makefile's targets (`make test` runs this after its checks). The
# suites that need different things run side by side, so the two cores are used while one suite
# only waits (a real operator's backoff, a toolchain build's downloads):
#   1. `make toolchain` builds what the test toolchain lacks (about 36 minutes on a new machine
#      with 2 cores, a second or two when cached), with MAGICSTICK_GO_SOURCES as this script
#      got it: the folder of the source archives it builds from where the Go module proxy
#      refuses a module. Beside it, `make test-pure` runs the pure suite (`pytest -m pure`)
#      with every tool of the toolchain hidden (tests/pure_environment.py): it must need none
#      of them, and a test that reaches for one without its marker fails there.
#   2. Once the toolchain is built, `make images browser engine-sources` (the real node's images,
#      as root: about four minutes on a new machine, seconds when cached; chromium and axe-core;
#      the engines' source that docs/engine-arguments.md cites: about two minutes on a new
#      machine, nothing when cached), then
#      side by side: `make test-node` (tests/node: the real node, mostly waiting on the
#      kubelet and the Pulumi Kubernetes Operator) and `make test-cluster` (every other suite
#      that is not pure), whose output is shown as it runs.
# The output of the suites that ran beside another (the build, the pure suite, the real node)
# is printed whole once each ends. The system packages of step 2 come from `make system`
# (scripts/system-packages.sh), which `make test` runs first.
# Arguments go to every pytest run (for example `-x` or `-k "name or other"`); a run that
# selects no test is not a failure.
# Exit status: the build's when it fails (step 2 is then skipped), else make's (2) when a suite
# failed, else 0.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

logs=$(mktemp -d)
lanes=()
trap 'kill "${lanes[@]}" 2>/dev/null; rm -rf "$logs"' EXIT

# Starts `make TARGET...` in the background, its output into $logs/NAME; sets $started.
start() {
    local name=$1
    shift
    make --no-print-directory "$@" >"$logs/$name" 2>&1 &
    started=$!
    lanes+=("$started")
}

# Waits for the lane PID, prints its output under a heading, and returns its status.
finish() {
    local name=$1 pid=$2 status
    wait "$pid"
    status=$?
    printf '\nrun-tests: %s (exit %d):\n' "$name" "$status" >&2
    cat "$logs/$name" >&2
    return "$status"
}

# The arguments, quoted for the shell that runs make's recipe.
pytest_args=""
if (($#)); then
    pytest_args=$(printf '%q ' "$@")
fi
export MAGICSTICK_GO_SOURCES=${MAGICSTICK_GO_SOURCES:-}
start "the toolchain build" toolchain
build=$started
start "the pure suite" test-pure PYTEST_ARGS="$pytest_args"
pure=$started

finish "the toolchain build" "$build"
built=$?
if ((built != 0)); then
    finish "the pure suite" "$pure"
    printf 'run-tests: the toolchain build failed (exit %d, above); the tests that need it did not run\n' "$built" >&2
    exit "$built"
fi

make --no-print-directory images browser engine-sources || {
    printf 'run-tests: the images, the browser or the engine sources could not be set up (above); the tests that need them did not run\n' >&2
    finish "the pure suite" "$pure"
    exit 1
}
start "the real node's suite" test-node PYTEST_ARGS="$pytest_args"
node=$started
make --no-print-directory test-cluster PYTEST_ARGS="$pytest_args"
cluster=$?

finish "the pure suite" "$pure"
pure_status=$?
finish "the real node's suite" "$node"
node_status=$?
for status in "$pure_status" "$cluster" "$node_status"; do
    ((status == 0)) || exit "$status"
done
exit 0
