#!/usr/bin/env bash
# The whole test suite from the repository root's virtual environment (venv/), in two runs:
#   1. the pure suite (`-m "not cluster and not e2e and not peers and not browser"`), with every tool of the test
#      toolchain pointed at a path that does not exist: it must need none of them, and a test
#      that reaches for one without its marker fails here instead of passing by luck. Meanwhile
#      scripts/toolchain/build.sh builds what the toolchain lacks (about an hour on a new machine
#      with 2 cores, a second or two when cached); its progress is printed once it ends. It gets
#      MAGICSTICK_GO_SOURCES as this script got it (.ci/run sets it): the folder of the source
#      archives it builds from where the Go module proxy refuses a module;
#   2. everything that uses the toolchain or a browser (`-m "cluster or e2e or peers or browser"`), once
#      scripts/browser/setup.sh has made sure of Debian's chromium and of axe-core (a second
#      when they are there), and scripts/images/build.sh has built the images the real node of
#      the `cluster_real` tests runs (as root: about eight minutes on a new machine, seconds when
#      cached).
# Arguments go to both pytest runs (for example `-x`, `-k name` or a test path); a run that
# selects no test is not a failure unless neither selects one (pytest's status 5).
# Exit status: the build's when it fails (the second run is then skipped), else the first
# failing run's, else 0.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_log=$(mktemp)
build=""
trap '[[ -z $build ]] || kill "$build" 2>/dev/null; rm -f "$build_log"' EXIT
MAGICSTICK_GO_SOURCES=${MAGICSTICK_GO_SOURCES:-} scripts/toolchain/build.sh >"$build_log" 2>&1 &
build=$!

nowhere=/nonexistent/magicstick-toolchain
MAGICSTICK_KUBE_APISERVER=$nowhere/kube-apiserver MAGICSTICK_KUBE_CONTROLLER_MANAGER=$nowhere/kube-controller-manager \
    MAGICSTICK_ETCD=$nowhere/etcd MAGICSTICK_PULUMI=$nowhere/pulumi MAGICSTICK_PULUMI_RESOURCE_KUBERNETES=$nowhere/pulumi-resource-kubernetes \
    MAGICSTICK_EGCTL=$nowhere/egctl MAGICSTICK_HELM=$nowhere/helm MAGICSTICK_FLUX=$nowhere/flux \
    MAGICSTICK_SOURCE_CONTROLLER=$nowhere/source-controller MAGICSTICK_KUSTOMIZE_CONTROLLER=$nowhere/kustomize-controller \
    MAGICSTICK_HELM_CONTROLLER=$nowhere/helm-controller MAGICSTICK_KUBE_SCHEDULER=$nowhere/kube-scheduler \
    MAGICSTICK_KUBE_PROXY=$nowhere/kube-proxy MAGICSTICK_KUBELET=$nowhere/kubelet MAGICSTICK_COREDNS=$nowhere/coredns \
    MAGICSTICK_PKO_MANAGER=$nowhere/manager MAGICSTICK_PKO_AGENT=$nowhere/agent MAGICSTICK_KUBEAI=$nowhere/kubeai \
    venv/bin/pytest -m "not cluster and not e2e and not peers and not browser" "$@"
pure=$?

wait "$build"
built=$?
build=""
cat "$build_log" >&2
if ((built != 0)); then
    printf 'run-tests: the toolchain build failed (exit %d, above); the tests that need it did not run\n' "$built" >&2
    exit "$built"
fi

if ! scripts/images/build.sh >/dev/null; then
    printf 'run-tests: scripts/images/build.sh failed (above); the tests that need it did not run\n' >&2
    exit 1
fi
if ! scripts/browser/setup.sh >/dev/null; then
    printf 'run-tests: scripts/browser/setup.sh failed (above); the tests that need it did not run\n' >&2
    exit 1
fi
venv/bin/pytest -m "cluster or e2e or peers or browser" "$@"
rest=$?

readonly NO_TESTS_COLLECTED=5
if ((pure == NO_TESTS_COLLECTED && rest == NO_TESTS_COLLECTED)); then
    exit "$NO_TESTS_COLLECTED"
fi
for status in "$pure" "$rest"; do
    ((status == 0 || status == NO_TESTS_COLLECTED)) || exit "$status"
done
exit 0
