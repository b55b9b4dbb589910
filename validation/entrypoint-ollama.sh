#!/bin/sh
# The Ollama validation image's entrypoint: start `ollama serve` in the background, wait for it
# (bounded), run ollama_check.py and return its exit code. If the server does not come up, the
# check still runs: it finds Ollama unreachable and writes a report (exit 1).
set -u

: "${HOME:=/scratch}"
export HOME
export OLLAMA_HOST="${OLLAMA_HOST:-127.0.0.1:11434}"
export OLLAMA_MODELS="${OLLAMA_MODELS:-$HOME/.ollama/models}"
export MAGICSTICK_OLLAMA_URL="${MAGICSTICK_OLLAMA_URL:-http://$OLLAMA_HOST}"
start_seconds="${MAGICSTICK_OLLAMA_START_SECONDS:-60}"

ollama serve &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null' EXIT

waited=0
until ollama list >/dev/null 2>&1; do
    if ! kill -0 "$server" 2>/dev/null; then
        echo "ollama serve exited before it answered" >&2
        break
    fi
    if [ "$waited" -ge "$start_seconds" ]; then
        echo "ollama serve did not answer within ${start_seconds}s" >&2
        break
    fi
    sleep 1
    waited=$((waited + 1))
done

python3 "${MAGICSTICK_OLLAMA_CHECK:-/opt/magicstick/ollama_check.py}"
exit $?
