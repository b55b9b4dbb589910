#!/usr/bin/env bash
# Build the test toolchain from Go modules through the Go module proxy: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kube-proxy and the kubelet, the Pulumi CLI with the
# Python SDK's plugin scripts and the Python language host, the Pulumi Kubernetes provider, and
# the peers that judge what the program renders: egctl, helm and flux; and Flux's source-,
# kustomize- and helm-controller, which the `cluster_real` suite runs against the node's API server;
# CoreDNS, the real node's cluster DNS; the Pulumi Kubernetes Operator's manager and agent,
# KubeAI's controller, and Ollama's server with its CPU engine (cgo: gcc and g++).
# The versions are pinned in scripts/toolchain/versions.env; README.md beside this script says
# why each step is done the way it is.
#
# Installs into a cache OUTSIDE the repository, one directory per tool and version:
#   ${MAGICSTICK_TOOLCHAIN_CACHE:-$HOME/.cache/magicstick/toolchain}/<tool>-<version>/
# Idempotent: a tool whose cached binary answers with its pinned version is not built again.
# One build per cache: the script holds build.lock in the cache (flock); another one waits.
# Talks on stderr: one numbered line per step; a failure names the step, the exit status, what
#   failed and the log (build.log in the cache). Prints only the tools' paths on stdout.
# Exit status: 0 built or cached, 127 a required command is missing, else the failed command's.
# Needs no root, no download site and no git: only `go` and the module proxy (GOPROXY). A source
# the proxy refuses (GO_SOURCES below) is taken from its archive in $MAGICSTICK_GO_SOURCES, checked
# against the sha256 pinned in versions.env; without the variable, the build stops saying so.
set -eEuo pipefail

# Builtins only until the required commands are checked.
SCRIPT_DIR=$(cd "${BASH_SOURCE[0]%/*}" && pwd)
readonly SCRIPT_DIR
# shellcheck source=versions.env
source "$SCRIPT_DIR/versions.env"
readonly STEP_COUNT=15
readonly LANGUAGE_HOST_MODULE=github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3
readonly PROVIDER_MODULE=github.com/pulumi/pulumi-kubernetes/provider/v4
readonly PKO_MODULE=github.com/pulumi/pulumi-kubernetes-operator/v2
readonly KUBEAI_MODULE=github.com/kubeai-project/kubeai
readonly OLLAMA_MODULE=github.com/ollama/ollama
readonly PULUMI_CLIPBOARD_REPLACE="github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e"
declare -rA PACKAGE_OF=([flock]=util-linux [go]=golang [sha256sum]=coreutils [cp]=coreutils [tar]=tar [gzip]=gzip)
# Go sources the module proxy may refuse, one row each: the module and version the proxy is asked
# for first (what a user with internet gets), then the archive in $MAGICSTICK_GO_SOURCES that holds
# the same source, its sha256 (pinned in versions.env) and the module's folder inside it. go_source
# gives a build step whichever answered.
#   [tool]="module version archive sha256 folder"
declare -rA GO_SOURCES=(
    [pulumi-language-python]="$LANGUAGE_HOST_MODULE $PULUMI_LANGUAGE_PYTHON_MODULE_VERSION $PULUMI_LANGUAGE_PYTHON_ARCHIVE $PULUMI_LANGUAGE_PYTHON_ARCHIVE_SHA256 sdk/python/cmd/pulumi-language-python"
    [pulumi-kubernetes-operator]="$PKO_MODULE $PKO_VERSION $PKO_ARCHIVE $PKO_ARCHIVE_SHA256 ."
    [kubeai]="$KUBEAI_MODULE $KUBEAI_VERSION $KUBEAI_ARCHIVE $KUBEAI_ARCHIVE_SHA256 ."
)

CACHE_DIR=${MAGICSTICK_TOOLCHAIN_CACHE:-$HOME/.cache/magicstick/toolchain}
STARTED=${EPOCHREALTIME/[.,]/}
CURRENT_STEP="checking the required commands"
FAILED_COMMAND=""
REPORTED=""
LOG=""
WORK=""
LOCK_FD=""
BUILT=()
SOURCE_DIR=""
SOURCE_ORIGIN=""
UNPACKED=""

# A module that needs a newer Go than the machine's must fail here, not fetch a toolchain.
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0

log() { printf 'build-toolchain: %s\n' "$*" >&2; }

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
    log "step '$CURRENT_STEP' failed (exit $status): $what${LOG:+; see $LOG}"
    [[ -z $excerpt ]] || printf '%s\n' "$excerpt" | sed 's/^/    /' >&2
    exit "$status"
}

on_exit() {
    local status=$?
    [[ -z $WORK ]] || { chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"; }
    if ((status != 0)) && [[ -z $REPORTED ]]; then
        log "step '$CURRENT_STEP' failed (exit $status): ${FAILED_COMMAND:-interrupted}${LOG:+; see $LOG}"
    fi
}
trap '[[ -n $FAILED_COMMAND ]] || FAILED_COMMAND="\`$BASH_COMMAND\` (line $LINENO)"' ERR
trap on_exit EXIT

join() {
    local separator=$1 first=$2
    shift 2
    printf '%s' "$first" "${@/#/$separator}"
}

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

# Runs one command with its output in the log; a failure stops the build saying `what`
# failed, followed by the last lines the command printed.
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
    local lock_file=$CACHE_DIR/build.lock
    { exec {LOCK_FD}>>"$lock_file"; } 2>/dev/null || fail $? "cannot open the lock file $lock_file"
    if ! flock -n "$LOCK_FD"; then
        log "waiting for another build (lock $lock_file)"
        flock "$LOCK_FD" || fail $? "cannot take the lock $lock_file"
    fi
    LOG=$CACHE_DIR/build.log
    : >"$LOG"
}

# A fresh wrapper module in $WORK/<name>: go.mod with `requires` and `replaces` lines, and a
# tools.go importing `packages`, so that `go mod tidy` resolves them through the proxy.
wrapper_module() {
    local name=$1 go_version=$2 requires=$3 replaces=$4
    shift 4
    local dir=$WORK/$name package
    mkdir -p "$dir"
    {
        printf 'module magicstick.local/toolchain/%s\n\ngo %s\n\nrequire (\n%s)\n' "$name" "$go_version" "$requires"
        [[ -z $replaces ]] || printf '\nreplace (\n%s)\n' "$replaces"
    } >"$dir/go.mod"
    {
        printf '//go:build tools\n\npackage tools\n\nimport (\n'
        for package in "$@"; do printf '\t_ "%s"\n' "$package"; done
        printf ')\n'
    } >"$dir/tools.go"
    printf '%s' "$dir"
}

# Records what was built beside the binary: versions, Go, sha256, time.
write_stamp() {
    local binary=$1
    shift
    {
        printf '%s\n' "$@"
        printf 'go=%s\n' "$(go env GOVERSION)"
        printf 'sha256=%s\n' "$(sha256sum "$binary" | cut -d' ' -f1)"
        printf 'built=%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    } >"$binary.stamp"
}

install_binary() {
    local built=$1 target=$2
    mkdir -p "$(dirname "$target")"
    cp "$built" "$target.partial" && mv -f "$target.partial" "$target"
}

# A writable copy of `module@version` in $WORK/<name>, for builds that must change or add a file
# in the module's own tree; prints its path.
writable_module_copy() {
    local module=$1 version=$2 name=$3 source
    source=$(env -C "$WORK" go mod download -json "$module@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
    [[ -d $source ]] || fail 1 "the module proxy did not serve $module@$version"
    cp -R "$source" "$WORK/$name" && chmod -R u+w "$WORK/$name"
    printf '%s' "$WORK/$name"
}

answers() {
    local binary=$1 expected=$2
    shift 2
    local output
    [[ -x $binary ]] && output=$("$binary" "$@" 2>/dev/null {LOCK_FD}>&-) && [[ $output == *"$expected"* ]]
}

build_etcd() {
    local binary=$CACHE_DIR/etcd-$ETCD_VERSION/etcd
    step 3 "etcd $ETCD_VERSION" "go.etcd.io/etcd/server/v3"
    if answers "$binary" "etcd Version: ${ETCD_VERSION#v}" --version; then
        log "already built: $binary"
    else
        # server/v3 replaces its sibling modules with local paths: require them at the same version.
        local module requires="" dir
        for module in server/v3 api/v3 client/pkg/v3 client/v3 pkg/v3; do
            requires+=$'\t'"go.etcd.io/etcd/$module $ETCD_VERSION"$'\n'
        done
        dir=$(wrapper_module etcd 1.26.0 "$requires" "" go.etcd.io/etcd/server/v3)
        run "go mod tidy could not resolve etcd $ETCD_VERSION" env -C "$dir" go mod tidy
        run "go build of etcd failed" env -C "$dir" go build -trimpath -o "$dir/etcd" go.etcd.io/etcd/server/v3
        install_binary "$dir/etcd" "$binary"
        write_stamp "$binary" "version=$ETCD_VERSION" "module=go.etcd.io/etcd/server/v3@$ETCD_VERSION"
        answers "$binary" "etcd Version: ${ETCD_VERSION#v}" --version || fail 1 "the built etcd does not answer --version with $ETCD_VERSION"
    fi
    BUILT+=("$binary")
}

# kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy and the kubelet come from one
# wrapper module: the controller manager runs only the garbage collector and the namespace
# controller in most tests (the finalizers a foreground deletion and a namespace deletion wait for);
# the `cluster_real` suite runs one node with them all: the kubelet runs Pods with Debian's
# containerd and runc, the scheduler places them, kube-proxy routes Service addresses to them.
readonly KUBE_COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet)
build_kubernetes() {
    local directory=$CACHE_DIR/kube-apiserver-$KUBE_VERSION command missing=()
    step 4 "${KUBE_COMMANDS[*]} $KUBE_VERSION" "k8s.io/kubernetes with its staging modules at $KUBE_STAGING_VERSION"
    for command in "${KUBE_COMMANDS[@]}"; do
        answers "$directory/$command" "Kubernetes $KUBE_VERSION" --version || missing+=("$command")
    done
    if ((${#missing[@]} == 0)); then
        log "already built: ${KUBE_COMMANDS[*]/#/$directory/}"
    else
        # k8s.io/kubernetes replaces every staging module with ./staging/src/...; a wrapper
        # module replaces each with its published release instead.
        local mod replaces="" staging dir minor
        mod=$(env -C "$WORK" go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
        [[ -f $mod ]] || fail 1 "the module proxy did not serve k8s.io/kubernetes@$KUBE_VERSION"
        while read -r staging; do
            replaces+=$'\t'"$staging => $staging $KUBE_STAGING_VERSION"$'\n'
        done < <(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$mod")
        [[ -n $replaces ]] || fail 1 "no staging replaces found in $mod"
        dir=$(wrapper_module kubernetes 1.25.0 $'\t'"k8s.io/kubernetes $KUBE_VERSION"$'\n' "$replaces" "${KUBE_COMMANDS[@]/#/k8s.io/kubernetes/cmd/}")
        minor=${KUBE_VERSION#v1.}
        minor=${minor%%.*}
        # The version ldflags: without them the server says v0.0.0 and clients take old-cluster paths.
        local version_package=k8s.io/component-base/version
        local ldflags="-X $version_package.gitVersion=$KUBE_VERSION -X $version_package.gitMajor=1 -X $version_package.gitMinor=$minor -X $version_package.gitTreeState=clean -X $version_package.buildDate=1970-01-01T00:00:00Z"
        run "go mod tidy could not resolve k8s.io/kubernetes $KUBE_VERSION" env -C "$dir" go mod tidy
        for command in "${missing[@]}"; do
            log "compiling $command (several minutes on 2 cores)"
            run "go build of $command failed" env -C "$dir" go build -trimpath -ldflags "$ldflags" -o "$dir/$command" "k8s.io/kubernetes/cmd/$command"
            install_binary "$dir/$command" "$directory/$command"
            write_stamp "$directory/$command" "version=$KUBE_VERSION" "staging=$KUBE_STAGING_VERSION"
            answers "$directory/$command" "Kubernetes $KUBE_VERSION" --version || fail 1 "the built $command does not answer --version with Kubernetes $KUBE_VERSION"
        done
    fi
    BUILT+=("${KUBE_COMMANDS[@]/#/$directory/}")
}

build_pulumi() {
    local directory=$CACHE_DIR/pulumi-$PULUMI_VERSION
    local binary=$directory/pulumi
    step 5 "pulumi $PULUMI_VERSION" "github.com/pulumi/pulumi/pkg/v3 cmd/pulumi, and the Python SDK's plugin scripts"
    if answers "$binary" "$PULUMI_VERSION" version && [[ -x $directory/pulumi-resource-pulumi-python && -x $directory/pulumi-language-python-exec ]]; then
        log "already built: $binary"
    else
        # pkg/v3 replaces sdk/v3 with ../sdk: require both at the release, restate its other replace.
        local requires replaces dir sdk
        requires=$'\t'"github.com/pulumi/pulumi/pkg/v3 $PULUMI_VERSION"$'\n'$'\t'"github.com/pulumi/pulumi/sdk/v3 $PULUMI_VERSION"$'\n'
        replaces=$'\t'"$PULUMI_CLIPBOARD_REPLACE"$'\n'
        dir=$(wrapper_module pulumi 1.26.6 "$requires" "$replaces" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
        run "go mod tidy could not resolve pulumi $PULUMI_VERSION" env -C "$dir" go mod tidy
        log "compiling pulumi (several minutes on 2 cores)"
        run "go build of pulumi failed" env -C "$dir" go build -trimpath \
            -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
            -o "$dir/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
        install_binary "$dir/pulumi" "$binary"
        # The scripts the CLI looks for beside itself ship in the sdk/v3 module; a module zip
        # keeps no run bits, so they are set here.
        sdk=$(env -C "$dir" go list -m -f '{{.Dir}}' github.com/pulumi/pulumi/sdk/v3)
        install_binary "$sdk/python/dist/pulumi-resource-pulumi-python" "$directory/pulumi-resource-pulumi-python"
        install_binary "$sdk/python/cmd/pulumi-language-python-exec" "$directory/pulumi-language-python-exec"
        chmod 0755 "$directory/pulumi-resource-pulumi-python" "$directory/pulumi-language-python-exec" "$binary"
        write_stamp "$binary" "version=$PULUMI_VERSION" "commit=$PULUMI_COMMIT"
        answers "$binary" "$PULUMI_VERSION" version || fail 1 "the built pulumi does not answer 'version' with $PULUMI_VERSION"
    fi
    BUILT+=("$binary" "$directory/pulumi-resource-pulumi-python" "$directory/pulumi-language-python-exec")
}

# What the module proxy says when it refuses a module, from `go mod download -json`'s answer:
# "403 Forbidden server response: ...", without the request it repeats.
proxy_refusal() {
    local answer
    answer=$(printf '%s' "$1" | sed -n 's/^\t"Error": "\(.*\)",\{0,1\}$/\1/p' | sed 's/\\n\\t/ /g; s/^.*\.info: //' | head -n1)
    printf '%s' "${answer:-refused}"
}

# The source of the tool GO_SOURCES names, in SOURCE_DIR, and where it came from, in SOURCE_ORIGIN
# (for the stamp): the module as the proxy serves it; else the pinned archive of
# $MAGICSTICK_GO_SOURCES, its sha256 checked, unpacked afresh into the cache's sources/<archive>/.
go_source() {
    local tool=$1 module version archive sha256 folder answer refusal
    read -r module version archive sha256 folder <<<"${GO_SOURCES[$tool]}"
    if answer=$(env -C "$WORK" go mod download -json "$module@$version" 2>&1) && [[ $answer != *'"Error"'* ]]; then
        SOURCE_DIR=$(printf '%s' "$answer" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
        [[ -d $SOURCE_DIR ]] || fail 1 "the module proxy did not serve $module@$version"
        SOURCE_ORIGIN="source=proxy $module@$version"
        log "$tool from the module proxy: $module@$version"
        return
    fi
    refusal="the module proxy refuses $module@$version ($(proxy_refusal "$answer"))"
    unpack_pinned_archive "$archive" "$sha256" "$refusal"
    SOURCE_DIR=$UNPACKED/$folder
    [[ -d $SOURCE_DIR ]] || fail 1 "$archive holds no folder $folder"
    SOURCE_ORIGIN="source=archive $archive sha256=$sha256"
    log "$refusal; $tool from $MAGICSTICK_GO_SOURCES/$archive (sha256 as pinned), unpacked into $UNPACKED"
}

# Unpacks `archive` of $MAGICSTICK_GO_SOURCES, its sha256 checked against `sha256`, afresh into the
# cache's sources/<archive>/ and sets UNPACKED to that folder; `why` opens the failure messages.
unpack_pinned_archive() {
    local archive=$1 sha256=$2 why=$3
    [[ -n ${MAGICSTICK_GO_SOURCES:-} ]] || fail 1 "$why and MAGICSTICK_GO_SOURCES is not set (the folder holding $archive)"
    local file=$MAGICSTICK_GO_SOURCES/$archive actual
    [[ -f $file ]] || fail 1 "$why and MAGICSTICK_GO_SOURCES=$MAGICSTICK_GO_SOURCES holds no $archive"
    actual=$(sha256sum "$file" | cut -d' ' -f1)
    [[ $actual == "$sha256" ]] || fail 1 "$file has sha256 $actual, versions.env pins $sha256"
    UNPACKED=$CACHE_DIR/sources/${archive%.tar.gz}
    rm -rf "$UNPACKED" "$UNPACKED.partial"
    mkdir -p "$UNPACKED.partial"
    run "could not unpack $file" tar -xzf "$file" -C "$UNPACKED.partial" --strip-components=1 --no-same-owner
    mv "$UNPACKED.partial" "$UNPACKED"
}

# The Python language host, beside pulumi, where the CLI looks for it. Its module replaces pkg/v3
# and sdk/v3 with the repository's own folders, so its main package is built in a module of its
# own, of the same name, that requires them at the CLI's release (and restates pulumi's clipboard
# replace), from the proxy's source or the archive's alike.
build_language_host() {
    local directory=$CACHE_DIR/pulumi-$PULUMI_VERSION
    local binary=$directory/pulumi-language-python
    step 6 "pulumi-language-python $PULUMI_VERSION" "$LANGUAGE_HOST_MODULE, beside pulumi"
    if answers "$binary" "$PULUMI_VERSION" -version; then
        log "already built: $binary"
    else
        go_source pulumi-language-python
        local dir=$WORK/language-host file
        mkdir -p "$dir"
        for file in "$SOURCE_DIR"/*.go; do
            [[ $file == *_test.go || ! -f $file ]] || cp "$file" "$dir/"
        done
        [[ -f $dir/main.go ]] || fail 1 "no main.go in $SOURCE_DIR"
        printf 'module %s\n\ngo 1.26\n\nrequire (\n\tgithub.com/pulumi/pulumi/pkg/v3 %s\n\tgithub.com/pulumi/pulumi/sdk/v3 %s\n)\n\nreplace %s\n' \
            "$LANGUAGE_HOST_MODULE" "$PULUMI_VERSION" "$PULUMI_VERSION" "$PULUMI_CLIPBOARD_REPLACE" >"$dir/go.mod"
        run "go mod tidy could not resolve the language host" env -C "$dir" go mod tidy
        log "compiling pulumi-language-python"
        run "go build of the language host failed" env -C "$dir" go build -trimpath \
            -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" -o "$dir/pulumi-language-python" .
        install_binary "$dir/pulumi-language-python" "$binary"
        write_stamp "$binary" "version=$PULUMI_VERSION" "$SOURCE_ORIGIN"
        answers "$binary" "$PULUMI_VERSION" -version || fail 1 "the built pulumi-language-python does not answer -version with $PULUMI_VERSION"
    fi
    BUILT+=("$binary")
}

build_provider() {
    local version=${PULUMI_KUBERNETES_VERSION#v}
    local directory=$CACHE_DIR/pulumi-resource-kubernetes-$PULUMI_KUBERNETES_VERSION
    local binary=$directory/pulumi-resource-kubernetes
    local home=$CACHE_DIR/pulumi-home-$PULUMI_VERSION
    step 7 "pulumi-resource-kubernetes $PULUMI_KUBERNETES_VERSION" "$PROVIDER_MODULE@$PULUMI_KUBERNETES_PROVIDER_MODULE_VERSION"
    if [[ -x $binary && -f $binary.stamp ]] && grep -qx "version=$PULUMI_KUBERNETES_VERSION" "$binary.stamp"; then
        log "already built: $binary"
    else
        local dir
        # `go generate` writes the embedded schema into the module's own tree: build from a
        # writable copy, with the SDK module (a ../sdk replace upstream) at its release.
        dir=$(writable_module_copy "$PROVIDER_MODULE" "$PULUMI_KUBERNETES_PROVIDER_MODULE_VERSION" provider)
        run "could not point the provider at pulumi-kubernetes/sdk/v4 $PULUMI_KUBERNETES_VERSION" env -C "$dir" \
            go mod edit -replace "github.com/pulumi/pulumi-kubernetes/sdk/v4=github.com/pulumi/pulumi-kubernetes/sdk/v4@$PULUMI_KUBERNETES_VERSION"
        run "go mod tidy could not resolve the provider's modules" env -C "$dir" go mod tidy
        run "go generate of the provider's embedded schema failed" env -C "$dir/cmd/pulumi-resource-kubernetes" VERSION="$version" go run generate.go
        log "compiling pulumi-resource-kubernetes (several minutes on 2 cores)"
        run "go build of pulumi-resource-kubernetes failed" env -C "$dir" go build -trimpath \
            -ldflags "-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$version" \
            -o "$dir/pulumi-resource-kubernetes" ./cmd/pulumi-resource-kubernetes
        install_binary "$dir/pulumi-resource-kubernetes" "$binary"
        write_stamp "$binary" "version=$PULUMI_KUBERNETES_VERSION" "module=$PROVIDER_MODULE@$PULUMI_KUBERNETES_PROVIDER_MODULE_VERSION"
    fi
    # The plugin as the engine finds it: installed from this file, never downloaded.
    run "pulumi plugin install of the provider failed" env PULUMI_HOME="$home" PULUMI_SKIP_UPDATE_CHECK=true \
        "$CACHE_DIR/pulumi-$PULUMI_VERSION/pulumi" plugin install resource kubernetes "$version" --file "$binary"
    BUILT+=("$binary")
}

# A tool whose module has no replace directives: `go install module/cmd@version` into $WORK.
# The cached binary is trusted when its stamp names the pinned version.
stamped() {
    local binary=$1 version=$2
    [[ -x $binary && -f $binary.stamp ]] && grep -qx "version=$version" "$binary.stamp"
}

# `egctl x translate` builds Envoy Gateway's translator without the controller's namespace, so
# no OIDC SecurityPolicy can find the HMAC Secret the installation keeps there (the real
# controller sets it, from ENVOY_GATEWAY_NAMESPACE, default envoy-gateway-system). The build uses
# a writable copy of the module in which each translator of that command gets the default
# namespace, the one egctl's loader also gives objects without a namespace.
readonly EGCTL_TRANSLATE=internal/cmd/egctl/translate.go
readonly EGCTL_CONTROLLER_NAMESPACE=envoy-gateway-system
readonly EGCTL_TRANSLATORS=3

build_egctl() {
    local binary=$CACHE_DIR/egctl-$ENVOY_GATEWAY_VERSION/egctl
    local module=github.com/envoyproxy/gateway
    step 8 "egctl $ENVOY_GATEWAY_VERSION" "$module cmd/egctl (Envoy Gateway's translator, for \`egctl x translate\`), with the controller namespace"
    if stamped "$binary" "$ENVOY_GATEWAY_VERSION"; then
        log "already built: $binary"
    else
        local dir count
        dir=$(writable_module_copy "$module" "$ENVOY_GATEWAY_VERSION" envoy-gateway)
        sed -i 's/^\(\s*\)GatewayClassName: \(\s*\)gwapiv1.ObjectName(resources.GatewayClass.Name),$/&\n\1ControllerNamespace: "'"$EGCTL_CONTROLLER_NAMESPACE"'",/' "$dir/$EGCTL_TRANSLATE"
        count=$(grep -c "^\s*ControllerNamespace: \"$EGCTL_CONTROLLER_NAMESPACE\",\$" "$dir/$EGCTL_TRANSLATE" || true)
        ((count == EGCTL_TRANSLATORS)) || fail 1 "expected $EGCTL_TRANSLATORS translators in $EGCTL_TRANSLATE of $module@$ENVOY_GATEWAY_VERSION, found $count to give the controller namespace"
        log "compiling egctl (several minutes on 2 cores)"
        run "go build of egctl $ENVOY_GATEWAY_VERSION failed" env -C "$dir" go build -trimpath -o "$dir/egctl-binary" ./cmd/egctl
        install_binary "$dir/egctl-binary" "$binary"
        write_stamp "$binary" "version=$ENVOY_GATEWAY_VERSION" "module=$module@$ENVOY_GATEWAY_VERSION" "patch=translator controller namespace"
    fi
    BUILT+=("$binary")
}

# Helm v4, the major helm-controller renders with (v1.6.3 runs a Flux build of Helm v4.2.4).
# The tests pass the test API server's Kubernetes version with --kube-version; without it Helm
# takes the one its client-go module implies.
build_helm() {
    local binary=$CACHE_DIR/helm-$HELM_VERSION/helm
    local package=helm.sh/helm/v4/cmd/helm
    step 9 "helm $HELM_VERSION" "$package"
    if answers "$binary" "$HELM_VERSION" version --template '{{.Version}}'; then
        log "already built: $binary"
    else
        log "compiling helm"
        run "go install of helm $HELM_VERSION failed" env GOBIN="$WORK/bin" GOFLAGS= go install -trimpath \
            -ldflags "-X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" "$package@$HELM_VERSION"
        install_binary "$WORK/bin/helm" "$binary"
        write_stamp "$binary" "version=$HELM_VERSION" "module=$package@$HELM_VERSION"
        answers "$binary" "$HELM_VERSION" version --template '{{.Version}}' || fail 1 "the built helm does not answer 'version' with $HELM_VERSION"
    fi
    BUILT+=("$binary")
}

# cmd/flux embeds the install manifests (`//go:embed manifests/*.yaml`), which the release
# process generates and the module zip lacks. Only `install` and `bootstrap` read them: the
# build uses a writable copy of the module with one empty manifest in their place.
build_flux() {
    local binary=$CACHE_DIR/flux-$FLUX_VERSION/flux
    local module=github.com/fluxcd/flux2/v2
    step 10 "flux $FLUX_VERSION" "$module cmd/flux, install manifests stubbed"
    if answers "$binary" "${FLUX_VERSION#v}" --version; then
        log "already built: $binary"
    else
        local dir
        dir=$(writable_module_copy "$module" "$FLUX_VERSION" flux)
        mkdir -p "$dir/cmd/flux/manifests"
        printf '# stub: this build of flux cannot install or bootstrap Flux\n' >"$dir/cmd/flux/manifests/stub.yaml"
        log "compiling flux (several minutes on 2 cores)"
        run "go build of flux $FLUX_VERSION failed" env -C "$dir" go build -trimpath \
            -ldflags "-X main.VERSION=${FLUX_VERSION#v}" -o "$dir/flux-binary" ./cmd/flux
        install_binary "$dir/flux-binary" "$binary"
        write_stamp "$binary" "version=$FLUX_VERSION" "module=$module@$FLUX_VERSION" "manifests=stubbed"
        answers "$binary" "${FLUX_VERSION#v}" --version || fail 1 "the built flux does not answer --version with $FLUX_VERSION"
    fi
    BUILT+=("$binary")
}

# Flux's controllers, at the versions whose CRDs are vendored in third_party/crds. Each module
# replaces its `api` module with ./api, which its zip lacks: a writable copy of the module points
# it at the published api module of the same version instead. helm-controller also replaces Helm
# with Flux's fork; where the proxy refuses the fork, the build says so and uses upstream Helm at
# the fork's base version (scripts/toolchain/README.md names what that leaves out).
readonly FLUX_CONTROLLERS=(source-controller kustomize-controller helm-controller)
readonly HELM_FORK_REPLACE=helm.sh/helm/v4
build_flux_controllers() {
    local directory=$CACHE_DIR/flux-controllers-$FLUX_VERSION controller version missing=()
    declare -A version_of=([source-controller]=$SOURCE_CONTROLLER_VERSION [kustomize-controller]=$KUSTOMIZE_CONTROLLER_VERSION [helm-controller]=$HELM_CONTROLLER_VERSION)
    step 11 "${FLUX_CONTROLLERS[*]}" "github.com/fluxcd/<controller> at $SOURCE_CONTROLLER_VERSION, $KUSTOMIZE_CONTROLLER_VERSION, $HELM_CONTROLLER_VERSION"
    for controller in "${FLUX_CONTROLLERS[@]}"; do
        stamped "$directory/$controller" "${version_of[$controller]}" || missing+=("$controller")
    done
    if ((${#missing[@]} == 0)); then
        log "already built: ${FLUX_CONTROLLERS[*]/#/$directory/}"
    fi
    local module dir fork
    for controller in "${missing[@]}"; do
        version=${version_of[$controller]}
        module=github.com/fluxcd/$controller
        dir=$(writable_module_copy "$module" "$version" "$controller")
        run "could not point $controller at its published api module" env -C "$dir" \
            go mod edit -replace "$module/api=$module/api@$version"
        fork=$(sed -n 's#^\(replace\)\{0,1\}\s*'"$HELM_FORK_REPLACE"' => \(\S*\) \(\S*\)$#\2@\3#p' "$dir/go.mod")
        if [[ -n $fork ]] && ! env -C "$dir" go mod download "$fork" >/dev/null 2>&1; then
            local base=${fork##*@}
            base=${base%-flux.*}
            log "$controller: the module proxy refuses Flux's Helm fork $fork; building against upstream $HELM_FORK_REPLACE $base, the fork's base"
            run "could not replace the Helm fork of $controller by upstream Helm" env -C "$dir" go mod edit -replace "$HELM_FORK_REPLACE=$HELM_FORK_REPLACE@$base"
        fi
        run "go mod tidy could not resolve $controller $version" env -C "$dir" go mod tidy
        log "compiling $controller (a few minutes on 2 cores)"
        run "go build of $controller $version failed" env -C "$dir" go build -trimpath -o "$dir/$controller-binary" .
        install_binary "$dir/$controller-binary" "$directory/$controller"
        write_stamp "$directory/$controller" "version=$version" "module=$module@$version" \
            "$(env -C "$dir" go list -m -f 'helm={{.Path}}@{{.Version}}{{with .Replace}} => {{.Path}}@{{.Version}}{{end}}' "$HELM_FORK_REPLACE" 2>/dev/null || printf 'helm=none')"
    done
    BUILT+=("${FLUX_CONTROLLERS[@]/#/$directory/}")
}

# CoreDNS with the plugins a cluster's Corefile uses (the full build links every cloud provider's
# DNS API): a main package of its own that registers them in CoreDNS's order, as CoreDNS's
# documentation for custom builds describes.
readonly COREDNS_PLUGINS=(bind errors log health ready cache kubernetes loop forward)
build_coredns() {
    local binary=$CACHE_DIR/coredns-$COREDNS_VERSION/coredns
    local module=github.com/coredns/coredns
    step 12 "coredns $COREDNS_VERSION" "$module with the plugins ${COREDNS_PLUGINS[*]}"
    if answers "$binary" "CoreDNS-${COREDNS_VERSION#v}" -version; then
        log "already built: $binary"
    else
        local dir plugin
        dir=$(wrapper_module coredns 1.26.0 $'\t'"$module $COREDNS_VERSION"$'\n' "" "$module/coremain")
        {
            printf 'package main\n\nimport (\n\t"github.com/coredns/coredns/core/dnsserver"\n\t"github.com/coredns/coredns/coremain"\n'
            for plugin in "${COREDNS_PLUGINS[@]}"; do printf '\t_ "%s/plugin/%s"\n' "$module" "$plugin"; done
            printf ')\n\nfunc init() {\n\tdnsserver.Directives = []string{'
            printf '"%s", ' "${COREDNS_PLUGINS[@]}"
            printf '}\n}\n\nfunc main() { coremain.Run() }\n'
        } >"$dir/main.go"
        rm "$dir/tools.go"
        run "go mod tidy could not resolve coredns $COREDNS_VERSION" env -C "$dir" go mod tidy
        log "compiling coredns"
        run "go build of coredns failed" env -C "$dir" go build -trimpath -o "$dir/coredns" .
        install_binary "$dir/coredns" "$binary"
        write_stamp "$binary" "version=$COREDNS_VERSION" "module=$module@$COREDNS_VERSION" "plugins=${COREDNS_PLUGINS[*]}"
        answers "$binary" "CoreDNS-${COREDNS_VERSION#v}" -version || fail 1 "the built coredns does not answer -version with $COREDNS_VERSION"
    fi
    BUILT+=("$binary")
}

# A writable copy of the source go_source found, in $WORK/<name> (a module cache copy is
# read-only, and -mod=mod writes go.sum); prints its path.
writable_source_copy() {
    local name=$1
    cp -R "$SOURCE_DIR" "$WORK/$name" && chmod -R u+w "$WORK/$name"
    printf '%s' "$WORK/$name"
}

# The Pulumi Kubernetes Operator: the manager (operator/cmd) and the agent its workspace pods run
# (agent/), with the version ldflags of its Dockerfile; the operator image
# (scripts/images/build.sh) is made from these two.
readonly PKO_COMMANDS=(manager agent)
build_pko() {
    local directory=$CACHE_DIR/pulumi-kubernetes-operator-$PKO_VERSION command missing=()
    step 13 "pulumi-kubernetes-operator $PKO_VERSION" "$PKO_MODULE operator/cmd and agent"
    for command in "${PKO_COMMANDS[@]}"; do
        stamped "$directory/$command" "$PKO_VERSION" || missing+=("$command")
    done
    if ((${#missing[@]} == 0)); then
        log "already built: ${PKO_COMMANDS[*]/#/$directory/}"
    else
        go_source pulumi-kubernetes-operator
        local dir package
        dir=$(writable_source_copy pulumi-kubernetes-operator)
        declare -A package_of=([manager]=./operator/cmd [agent]=./agent)
        for command in "${missing[@]}"; do
            package=${package_of[$command]}
            log "compiling the operator's $command (several minutes on 2 cores)"
            run "go build of the operator's $command failed" env -C "$dir" go build -trimpath \
                -ldflags "-X $PKO_MODULE/${package#./}/version.Version=$PKO_VERSION" -o "$dir/$command-binary" "$package"
            install_binary "$dir/$command-binary" "$directory/$command"
            write_stamp "$directory/$command" "version=$PKO_VERSION" "$SOURCE_ORIGIN"
        done
        # The agent logs its version (on stderr).
        [[ $("$directory/agent" version 2>&1 {LOCK_FD}>&-) == *"\"version\": \"$PKO_VERSION\""* ]] || fail 1 "the built agent does not answer 'version' with $PKO_VERSION"
        "$directory/manager" -h >/dev/null 2>&1 {LOCK_FD}>&- || fail 1 "the built manager does not answer -h"
    fi
    BUILT+=("${PKO_COMMANDS[@]/#/$directory/}")
}

# KubeAI's controller (cmd/main.go), which turns Models into Pods.
build_kubeai() {
    local binary=$CACHE_DIR/kubeai-$KUBEAI_VERSION/kubeai
    step 14 "kubeai $KUBEAI_VERSION" "$KUBEAI_MODULE cmd"
    if stamped "$binary" "$KUBEAI_VERSION"; then
        log "already built: $binary"
    else
        go_source kubeai
        local dir
        dir=$(writable_source_copy kubeai)
        log "compiling kubeai (several minutes on 2 cores)"
        run "go build of kubeai failed" env -C "$dir" go build -trimpath -o "$dir/kubeai-binary" ./cmd
        install_binary "$dir/kubeai-binary" "$binary"
        write_stamp "$binary" "version=$KUBEAI_VERSION" "$SOURCE_ORIGIN"
        "$binary" -h >/dev/null 2>&1 {LOCK_FD}>&- || fail 1 "the built kubeai does not answer -h"
    fi
    BUILT+=("$binary")
}

# Ollama's server and CLI with its CPU engine, the inference engine the model Pods run. Its cgo
# build compiles llama.cpp's and ggml's C and C++ sources, which include three header-only
# libraries from llama.cpp's vendor/ folder; a Go module zip never holds a vendor/ folder, so the
# headers come from their pinned archive in $MAGICSTICK_GO_SOURCES (OLLAMA_VENDOR_ARCHIVE).
build_ollama() {
    local binary=$CACHE_DIR/ollama-$OLLAMA_VERSION/ollama
    step 15 "ollama $OLLAMA_VERSION" "$OLLAMA_MODULE (cgo, CPU engine), llama.cpp's vendored headers from $OLLAMA_VENDOR_ARCHIVE"
    if stamped "$binary" "$OLLAMA_VERSION"; then
        log "already built: $binary"
    else
        require_commands gcc g++
        unpack_pinned_archive "$OLLAMA_VENDOR_ARCHIVE" "$OLLAMA_VENDOR_ARCHIVE_SHA256" "a Go module zip holds no vendor/ folder, so Ollama's cgo build needs llama.cpp's headers"
        local headers=$UNPACKED/llama/llama.cpp/vendor
        [[ -f $headers/nlohmann/json_fwd.hpp ]] || fail 1 "$OLLAMA_VENDOR_ARCHIVE holds no llama/llama.cpp/vendor/nlohmann/json_fwd.hpp"
        log "compiling ollama with its CPU engine (about 8 minutes on 2 cores)"
        run "go install of ollama $OLLAMA_VERSION failed" env GOBIN="$WORK/bin" GOFLAGS= CGO_ENABLED=1 \
            CGO_CPPFLAGS="-I$headers" go install -trimpath \
            -ldflags "-X $OLLAMA_MODULE/version.Version=${OLLAMA_VERSION#v}" "$OLLAMA_MODULE@$OLLAMA_VERSION"
        install_binary "$WORK/bin/ollama" "$binary"
        write_stamp "$binary" "version=$OLLAMA_VERSION" "module=$OLLAMA_MODULE@$OLLAMA_VERSION" "headers=$OLLAMA_VENDOR_ARCHIVE sha256=$OLLAMA_VENDOR_ARCHIVE_SHA256"
        answers "$binary" "${OLLAMA_VERSION#v}" --version || fail 1 "the built ollama does not answer --version with ${OLLAMA_VERSION#v}"
    fi
    BUILT+=("$binary")
}

main() {
    require_commands flock go sha256sum cp tar gzip
    lock_cache
    step 1 "checking the cache" "$CACHE_DIR"
    step 2 "checking Go" "$(go env GOVERSION), GOPROXY=$(go env GOPROXY)"
    WORK=$(mktemp -d)
    build_etcd
    build_kubernetes
    build_pulumi
    build_language_host
    build_provider
    build_egctl
    build_helm
    build_flux
    build_flux_controllers
    build_coredns
    build_pko
    build_kubeai
    build_ollama
    log "done in $(elapsed_seconds) s"
    printf '%s\n' "${BUILT[@]}"
}

main "$@"
