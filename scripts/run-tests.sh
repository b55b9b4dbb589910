#!/usr/bin/env bash
# Every suite, through the Makefile's targets (`make test` runs this after its checks), in two
# runs:
#   1. `make test-pure`: the pure suite (`pytest -m pure`) with every tool of the test toolchain
#      hidden (tests/pure_environment.py): it must need none of them, and a test that reaches
#      for one without its marker fails here instead of passing by luck. Meanwhile
#      `make toolchain` builds what the toolchain lacks (about 36 minutes on a new machine with
#      2 cores, a second or two when cached); its log is printed once it ends. It gets
#      MAGICSTICK_GO_SOURCES as this script got it: the folder of the source archives it builds
#      from where the Go module proxy refuses a module;
#   2. `make test-toolchain`: everything else (`pytest -m "not pure"`), once `make images` has
#      built the images the real node of the `cluster_real` tests runs (as root: about four
#      minutes on a new machine, seconds when cached) and `make browser` has made sure of
#      chromium and axe-core.
# The system packages of the second run come from `make system` (scripts/system-packages.sh),
# which `make test` runs first.
# Arguments go to both pytest runs, joined by spaces (for example `-x` or `-k name`); a run
# that selects no test is not a failure.
# Exit status: the build's when it fails (the second run is then skipped), else make's (2) when
# a run failed, else 0.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

build_log=$(mktemp)
build=""
trap '[[ -z $build ]] || kill "$build" 2>/dev/null; rm -f "$build_log"' EXIT
MAGICSTICK_GO_SOURCES=${MAGICSTICK_GO_SOURCES:-} make --no-print-directory toolchain >"$build_log" 2>&1 &
build=$!

make --no-print-directory test-pure PYTEST_ARGS="$*"
pure=$?

wait "$build"
built=$?
build=""
cat "$build_log" >&2
if ((built != 0)); then
    printf 'run-tests: the toolchain build failed (exit %d, above); the tests that need it did not run\n' "$built" >&2
    exit "$built"
fi

make --no-print-directory images browser || {
    printf 'run-tests: the images or the browser could not be set up (above); the tests that need them did not run\n' >&2
    exit 1
}
make --no-print-directory test-toolchain PYTEST_ARGS="$*"
rest=$?

((pure == 0)) || exit "$pure"
exit "$rest"
