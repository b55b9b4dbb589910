#!/usr/bin/env bash
# Fetch the source of the engine releases that docs/engine-arguments.md cites, into a cache
# OUTSIDE the repository (tests/engine_sources.py finds it):
#   ${MAGICSTICK_ENGINE_SOURCES_CACHE:-$HOME/.cache/magicstick/engine-sources}/
#     vllm-<release>/vllm/...      the Python files of vLLM's wheel, from PyPI (pip download --no-deps)
#     ollama-<release>/...         the Go files of Ollama's module, through the Go module proxy
# Idempotent: a release already in the cache is not fetched again; the wheel itself (about 400 MB)
# is not kept. Releases: versions.env beside this script. Needs python3 with pip, and go.
# Talks on stderr, one line per release fetched; prints nothing on stdout.
set -euo pipefail

SCRIPT_DIR=$(cd "${BASH_SOURCE[0]%/*}" && pwd)
readonly SCRIPT_DIR
# shellcheck source=versions.env
source "$SCRIPT_DIR/versions.env"
readonly PYTHON=${PYTHON:-python3}
readonly CACHE_DIR=${MAGICSTICK_ENGINE_SOURCES_CACHE:-$HOME/.cache/magicstick/engine-sources}
WORK=$(mktemp -d)
readonly WORK
trap 'chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT

log() { printf 'engine-sources: %s\n' "$*" >&2; }

fetch_vllm() {
    local release=$1 target="$CACHE_DIR/vllm-$1" wheel
    [[ -f $target/.complete ]] && return
    log "vLLM $release: the wheel from PyPI, its Python files kept"
    rm -rf "$target" "$WORK/wheel"
    "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: \
        --dest "$WORK/wheel" "vllm==$release"
    wheel=$(find "$WORK/wheel" -name "vllm-$release-*.whl" -print -quit)
    [[ -n $wheel ]] || { log "vLLM $release: pip gave no wheel"; exit 1; }
    "$PYTHON" - "$wheel" "$target" <<'PY'
import sys
import zipfile

wheel, target = sys.argv[1:]
with zipfile.ZipFile(wheel) as archive:
    archive.extractall(target, [name for name in archive.namelist() if name.startswith("vllm/") and name.endswith(".py")])
PY
    rm -rf "$WORK/wheel"
    touch "$target/.complete"
}

fetch_ollama() {
    local release=$1 target="$CACHE_DIR/ollama-$1" module
    [[ -f $target/.complete ]] && return
    log "Ollama $release: the Go module through the module proxy, its Go files kept"
    rm -rf "$target"
    module=$(GOMODCACHE="$WORK/gomod" GOFLAGS=-mod=mod go mod download -json "github.com/ollama/ollama@v$release" |
        "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
    (cd "$module" && find . -name '*.go' -print0 | while IFS= read -r -d '' file; do
        mkdir -p "$target/${file%/*}"
        cp "$file" "$target/$file"
    done)
    chmod -R u+w "$target"
    touch "$target/.complete"
}

mkdir -p "$CACHE_DIR"
for release in $VLLM_RELEASES; do fetch_vllm "$release"; done
for release in $OLLAMA_RELEASES; do fetch_ollama "$release"; done
