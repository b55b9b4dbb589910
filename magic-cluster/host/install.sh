#!/usr/bin/env bash
# Installs the Magic Stick host agent on this node: the program, its Node-bound credentials,
# the installer marker of a first install, and its systemd units. Run it as root on the node,
# with a kubectl whose current context reaches the cluster as an administrator:
#
#     magic-cluster/host/install.sh --first-install          # a new appliance
#     magic-cluster/host/install.sh                          # again: new token, same marker
#
# Every step can run again: the program is upgraded, the token and kubeconfig are written anew
# (this is how the token is renewed by hand), an existing marker is kept, the units replaced.
# It prints what it did and never the token. See README.md beside it; --help lists the options.
set -euo pipefail

readonly PROGRAM=install.sh
readonly SERVICE_ACCOUNT=magicstick-host-agent
readonly NAMESPACE=ai-system
readonly AGENT_UNIT=magicstick-host-agent.service
readonly TIMER_UNIT=magicstick-host-evidence.timer
readonly UNITS=(magicstick-host-agent.service magicstick-host-evidence.service magicstick-host-evidence.timer)
# Paths as on the host; every one is written below --root.
readonly VENV_PATH=/opt/magicstick/host-agent
readonly CONFIG_PATH=/etc/magicstick/host-agent
readonly STATE_PATH=/var/lib/magicstick
readonly UNIT_PATH=/etc/systemd/system
readonly SETUP_VERSION=v1
HERE=$(CDPATH="" cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
readonly HERE

usage() {
    cat <<EOF
usage: $PROGRAM [options]

Installs the Magic Stick host agent on this node (run as root, with kubectl reaching the
cluster as an administrator). Every step can be repeated.

  --node-name NAME       this host's Node (default: the host name, lower-case)
  --package SPEC         pip requirement or wheel path of the program (default: magicstick)
  --first-install        a new appliance: write the installer marker (kept if one exists)
  --root DIR             write every file below DIR instead of / (tests, image builds)
  --kubectl PATH         the kubectl to use (default: kubectl)
  --no-systemctl         do not call systemctl (tests, image builds)
  --token-duration DUR   lifetime of the agent's first token (default: 168h; it renews hourly)
  --skip-package         do not create the venv or install the program (tests)
  -h, --help             this text
EOF
}

say() { printf '%s: %s\n' "$PROGRAM" "$*"; }
die() {
    printf '%s: %s\n' "$PROGRAM" "$*" >&2
    exit 1
}
usage_error() {
    printf '%s: %s (see --help)\n' "$PROGRAM" "$*" >&2
    exit 2
}
# The last non-empty line of a file: the gist of a failed command's stderr.
last_line() { awk 'NF { line = $0 } END { print line }' "$1"; }

node_name=""
package=magicstick
first_install=false
root=/
kubectl=kubectl
use_systemctl=true
token_duration=168h
skip_package=false

while (($# > 0)); do
    option=$1
    value=""
    case $option in
        --*=*)
            value=${option#*=}
            option=${option%%=*}
            ;;
    esac
    case $option in
        --node-name | --package | --root | --kubectl | --token-duration)
            if [[ $1 != *=* ]]; then
                (($# >= 2)) || usage_error "$option needs a value"
                value=$2
                shift
            fi
            [[ -n $value ]] || usage_error "$option needs a value, got an empty one"
            ;;
        --first-install | --no-systemctl | --skip-package | -h | --help)
            [[ $1 != *=* ]] || usage_error "$option takes no value"
            ;;
        *) usage_error "unknown option '$1'" ;;
    esac
    case $option in
        --node-name) node_name=$value ;;
        --package) package=$value ;;
        --root) root=$value ;;
        --kubectl) kubectl=$value ;;
        --token-duration) token_duration=$value ;;
        --first-install) first_install=true ;;
        --no-systemctl) use_systemctl=false ;;
        --skip-package) skip_package=true ;;
        -h | --help)
            usage
            exit 0
            ;;
    esac
    shift
done

# --- the options, checked before anything is written ----------------------------------------

if [[ -z $node_name ]]; then
    node_name=$({ hostname 2>/dev/null || uname -n; } | tr '[:upper:]' '[:lower:]')
fi
# A Node name is a DNS subdomain: lower-case letters, digits, '-' and '.', at most 253.
if ((${#node_name} > 253)) || [[ ! $node_name =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]]; then
    usage_error "--node-name: '$node_name' is not a Node name (lower-case letters, digits, '-' and '.')"
fi
if [[ $root != /* ]]; then
    usage_error "--root: '$root' is not an absolute path"
fi
[[ -d $root ]] || usage_error "--root: '$root' is not a directory"
root=$(CDPATH="" cd -- "$root" && pwd -P)
# A Go duration, as kubectl takes it: 8760h, 720h, 90m, 1h30m.
if [[ ! $token_duration =~ ^([0-9]+(\.[0-9]+)?(h|m|s))+$ ]]; then
    usage_error "--token-duration: '$token_duration' is not a duration such as 8760h, 720h or 90m"
fi
if ! command -v -- "$kubectl" >/dev/null; then
    usage_error "--kubectl: '$kubectl' is not a command here (install kubectl first: see magic-cluster/host/README.md)"
fi
if [[ $use_systemctl == true && $root != / ]]; then
    usage_error "--root $root needs --no-systemctl: systemctl would act on this running host, not on $root"
fi
if [[ $root == / ]] && ((EUID != 0)); then
    die "run it as root: it writes $CONFIG_PATH, $STATE_PATH and $UNIT_PATH"
fi

# Paths as written (below --root). `root_path /etc` is "$root/etc", or "/etc" when root is /.
root_path() { printf '%s%s' "${root%/}" "$1"; }
venv=$(root_path "$VENV_PATH")
config_dir=$(root_path "$CONFIG_PATH")
state_dir=$(root_path "$STATE_PATH")
unit_dir=$(root_path "$UNIT_PATH")
token_file=$config_dir/token
kubeconfig_file=$config_dir/kubeconfig
marker_file=$state_dir/installer-marker

umask 022
scratch=$(mktemp -d)
trap 'rm -rf -- "$scratch"' EXIT

# --- b. the Node, first: nothing is written for a host that is not in the cluster -------------

if ! node_uid=$("$kubectl" get node "$node_name" -o 'jsonpath={.metadata.uid}' 2>"$scratch/stderr"); then
    if grep -q '(NotFound)' "$scratch/stderr"; then
        die "Node '$node_name' does not exist in the cluster of kubectl's current context (join this host first, or name its Node with --node-name)"
    fi
    die "cannot read Node '$node_name' with $kubectl: $(last_line "$scratch/stderr")"
fi
[[ -n $node_uid ]] || die "Node '$node_name' has no UID in kubectl's answer"
say "Node $node_name has UID $node_uid"

# --- a. the program, in its own virtual environment -------------------------------------------

if [[ $skip_package == true ]]; then
    say "skipped the program (--skip-package)"
else
    if ! python3 -m venv "$venv" 2>"$scratch/stderr"; then
        die "python3 -m venv $venv failed (on Debian and Ubuntu the venv module is python3-venv): $(last_line "$scratch/stderr")"
    fi
    if ! "$venv/bin/python" -m pip install --quiet --upgrade -- "$package" 2>"$scratch/stderr"; then
        die "--package: pip could not install '$package' into $venv: $(last_line "$scratch/stderr")"
    fi
    [[ -x $venv/bin/magicstick-host-agent ]] ||
        die "--package: '$package' has no magicstick-host-agent command (installed into $venv)"
    say "installed $package into $venv"
fi

# --- c. a token of the agent's ServiceAccount, bound to this Node -----------------------------

mkdir -p "$(dirname "$config_dir")"
install -d -m 0700 "$config_dir"
umask 077
if ! "$kubectl" create token "$SERVICE_ACCOUNT" -n "$NAMESPACE" \
    --bound-object-kind Node --bound-object-name "$node_name" --bound-object-uid "$node_uid" \
    --duration "$token_duration" >"$token_file.new" 2>"$scratch/stderr"; then
    rm -f -- "$token_file.new"
    die "cannot create a token for ServiceAccount $NAMESPACE/$SERVICE_ACCOUNT (are magic-cluster/platform/host-agent/ applied?): $(last_line "$scratch/stderr")"
fi
[[ -s $token_file.new ]] || die "kubectl create token answered with an empty token"
chmod 0600 "$token_file.new"
mv -f -- "$token_file.new" "$token_file"
say "wrote a token of $NAMESPACE/$SERVICE_ACCOUNT bound to Node $node_name, valid $token_duration, to $token_file"

# --- d. the agent's kubeconfig: the admin's cluster, the agent's token -------------------------

# --flatten embeds a certificate-authority file as certificate-authority-data, so a context
# with either gives the data here; --raw keeps it from being redacted.
cluster_field() {
    "$kubectl" config view --minify --flatten --raw -o "jsonpath={.clusters[0].cluster.$1}" 2>"$scratch/stderr" ||
        die "cannot read kubectl's current context: $(last_line "$scratch/stderr")"
}
server=$(cluster_field server)
ca_data=$(cluster_field certificate-authority-data)
tls_server_name=$(cluster_field tls-server-name)
insecure=$(cluster_field insecure-skip-tls-verify)
[[ $server == https://* ]] || die "the current context's server '$server' is not an https URL"
[[ $server =~ ^[^\"\\[:space:]]+$ ]] || die "the current context's server '$server' has quotes, backslashes or spaces"
[[ $insecure != true ]] || die "the current context skips TLS verification; the agent's kubeconfig would not: give the context its certificate authority"
[[ $ca_data =~ ^[A-Za-z0-9+/=]*$ ]] || die "the current context's certificate-authority-data is not base64"
[[ $tls_server_name =~ ^[A-Za-z0-9.-]*$ ]] || die "the current context's tls-server-name '$tls_server_name' is not a host name"

# The tokenFile the agent reads: the host's path with --root /; below a test's --root, the
# path where the token was written, so that the kubeconfig works as it is.
{
    printf 'apiVersion: v1\nkind: Config\n'
    printf 'clusters:\n- name: magicstick\n  cluster:\n    server: "%s"\n' "$server"
    if [[ -n $ca_data ]]; then
        printf '    certificate-authority-data: "%s"\n' "$ca_data"
    fi
    if [[ -n $tls_server_name ]]; then
        printf '    tls-server-name: "%s"\n' "$tls_server_name"
    fi
    printf 'users:\n- name: %s\n  user:\n    tokenFile: "%s"\n' "$SERVICE_ACCOUNT" "$token_file"
    printf 'contexts:\n- name: %s\n  context:\n    cluster: magicstick\n    user: %s\n    namespace: %s\n' \
        "$SERVICE_ACCOUNT" "$SERVICE_ACCOUNT" "$NAMESPACE"
    printf 'current-context: %s\n' "$SERVICE_ACCOUNT"
} >"$kubeconfig_file.new"
chmod 0600 "$kubeconfig_file.new"
mv -f -- "$kubeconfig_file.new" "$kubeconfig_file"
if [[ -n $ca_data ]]; then
    say "wrote $kubeconfig_file (server $server, its certificate authority embedded)"
else
    say "wrote $kubeconfig_file (server $server; no certificate authority in the context: the system's are trusted)"
fi

# --- e. the installer marker of a first install ------------------------------------------------

umask 022
mkdir -p "$(dirname "$state_dir")"
install -d -m 0755 "$state_dir"
umask 077
if [[ $first_install != true ]]; then
    say "no installer marker written (not --first-install)"
elif [[ -e $marker_file ]]; then
    say "kept the existing installer marker $marker_file"
elif [[ -e $marker_file.consumed ]]; then
    say "no installer marker written: the agent already consumed one ($marker_file.consumed); first run has happened"
else
    installation_id=""
    if [[ -r /proc/sys/kernel/random/uuid ]]; then
        installation_id=$(</proc/sys/kernel/random/uuid)
    else
        installation_id=$(python3 -c 'import uuid; print(uuid.uuid4())')
    fi
    [[ $installation_id =~ ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$ ]] ||
        die "could not make an installation ID (got '$installation_id')"
    printf '{"setupVersion": "%s", "installationId": "%s"}\n' "$SETUP_VERSION" "$installation_id" >"$marker_file.new"
    chmod 0600 "$marker_file.new"
    mv -f -- "$marker_file.new" "$marker_file"
    say "wrote the installer marker $marker_file (installationId $installation_id)"
fi

# --- f. the systemd units ------------------------------------------------------------------------

umask 022
mkdir -p "$unit_dir"
for unit in "${UNITS[@]}"; do
    install -m 0644 -- "$HERE/systemd/$unit" "$unit_dir/$unit"
done
say "copied ${UNITS[*]} into $unit_dir"

if [[ $use_systemctl != true ]]; then
    say "did not call systemctl (--no-systemctl)"
    exit 0
fi
was_active=false
if systemctl is-active --quiet "$AGENT_UNIT"; then
    was_active=true
fi
systemctl daemon-reload
systemctl enable --now "$AGENT_UNIT" "$TIMER_UNIT"
if [[ $was_active == true ]]; then
    # enable --now leaves a running agent alone: restart it on the program just installed.
    systemctl restart "$AGENT_UNIT"
    say "restarted $AGENT_UNIT; enabled $TIMER_UNIT"
else
    say "enabled and started $AGENT_UNIT and $TIMER_UNIT"
fi
