#!/usr/bin/env bash
# The Debian packages the tests beyond the pure suite need, installed where missing.
#   make system   (make test runs it first)
#
# Each package is looked for by a file it installs; only the missing ones are installed, with
# apt-get, as root: run as another user, this script says so and goes through sudo when there
# is one. A machine that has them all does nothing and needs no root. The pure suite
# (`pytest -m pure`) needs none of them.
#
#   chromium                      the browser suite (tests/browser), driven by Playwright
#   nodejs, npm                   axe-core for the browser suite (scripts/browser/setup.sh)
#   netplan.io, iproute2          the host agent's network actions (marker `machine`): netplan
#                                 generate judges what the agent writes, in a network namespace
#   containerd, runc,             the real node of the `cluster_real` tests (tests/node): the
#   containernetworking-plugins,  kubelet's container runtime, its CNI bridge, and iptables for
#   iptables                      kube-proxy
#   umoci, busybox-static,        the images scripts/images/build.sh makes for that node, from a
#   debootstrap, tini             debootstrap rootfs and busybox; the operator image's PID 1 is
#                                 tini-static
#   git                           git-http-backend serves the GitOps tree to Flux's controllers
#                                 (tests/flux)
#
# Exit status: 0 when everything is there (or was installed), 1 when it could not be installed.
set -euo pipefail

# package -> a file it installs
declare -rA MARKER_OF=(
    [chromium]=/usr/bin/chromium
    [nodejs]=/usr/bin/node
    [npm]=/usr/bin/npm
    [netplan.io]=/usr/sbin/netplan
    [iproute2]=/usr/sbin/ip
    [containerd]=/usr/bin/containerd
    [runc]=/usr/sbin/runc
    [containernetworking-plugins]=/usr/lib/cni/bridge
    [iptables]=/usr/sbin/iptables
    [umoci]=/usr/bin/umoci
    [busybox-static]=/bin/busybox
    [debootstrap]=/usr/sbin/debootstrap
    [tini]=/usr/bin/tini-static
    [git]=/usr/lib/git-core/git-http-backend
)

missing=()
for package in $(printf '%s\n' "${!MARKER_OF[@]}" | sort); do
    [[ -x ${MARKER_OF[$package]} ]] || missing+=("$package")
done
if ((${#missing[@]} == 0)); then
    echo "system-packages: all present" >&2
    exit 0
fi

echo "system-packages: installing Debian's ${missing[*]} (as root)" >&2
as_root=()
if ((EUID != 0)); then
    if ! command -v sudo >/dev/null; then
        echo "system-packages: root is needed to install them and there is no sudo; run as root: $0" >&2
        exit 1
    fi
    as_root=(sudo --preserve-env=DEBIAN_FRONTEND)
fi
export DEBIAN_FRONTEND=noninteractive
apt_get=("${as_root[@]}" apt-get -o DPkg::Lock::Timeout=600)
# An up-to-date package list only when the one on the machine does not have them.
"${apt_get[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null ||
    { "${apt_get[@]}" update >/dev/null && "${apt_get[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null; } ||
    { echo "system-packages: apt-get could not install ${missing[*]}" >&2; exit 1; }
echo "system-packages: installed ${missing[*]}" >&2
