#!/usr/bin/env bash
# make test-llm-engine: Skein's model steps against a real inference engine.
#
# Installs node-llama-cpp (llama.cpp's CPU build) here, writes a tiny
# random-weight GGUF with llama.cpp's gguf-py (shipped inside the package)
# and numpy, serves it over /v1/chat/completions with server.mjs, and runs
# vm/model's TestRealEngine against it. The model knows nothing: this proves
# the wire format and JSON-schema-constrained decoding, not answer quality.
# Not part of make test or CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work="$here/.work"
mkdir -p "$work"
cd "$here"

if [ ! -d node_modules/node-llama-cpp ] || [ ! -d node_modules/@node-llama-cpp/linux-x64 ]; then
	npm install --omit=optional --no-audit --no-fund --ignore-scripts
fi

py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
if ! "$py" -c 'import numpy' 2>/dev/null; then
	echo "installing python3-numpy" >&2
	apt-get install -y python3-numpy >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y python3-numpy >/dev/null; }
fi
if [ ! -d "$work/llama.cpp/gguf-py" ]; then
	git -c advice.detachedHead=false clone -q node_modules/node-llama-cpp/llama/gitRelease.bundle "$work/llama.cpp"
fi
PYTHONPATH="$work/llama.cpp/gguf-py" "$py" make_gguf.py "$work/tiny.gguf"

rm -f "$work/port"
node server.mjs "$work/tiny.gguf" "$work/port" >"$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
	[ -s "$work/port" ] && break
	if ! kill -0 $server 2>/dev/null; then
		cat "$work/server.log" >&2
		exit 1
	fi
	sleep 0.2
done
[ -s "$work/port" ] || { echo "the engine did not start" >&2; cat "$work/server.log" >&2; exit 1; }

cd "$root"
SKEIN_LLM_ENGINE_URL="http://127.0.0.1:$(cat "$work/port")/v1" ${GO:-go} test -count=1 -run '^TestRealEngine$' -v ./vm/model
