#!/usr/bin/env bash
# make test-llm-engine: Skein's model steps against llama.cpp's own
# llama-server.
#
# Takes llama.cpp's source from the git bundle inside the node-llama-cpp npm
# package (package.json pins it), builds llama-server from it once (CPU only;
# the binary is kept under .work and rebuilt only when the pinned source
# changes), writes a tiny random-weight GGUF with a chat template that has
# tools (make_gguf.py, with llama.cpp's gguf-py and numpy), serves it with
# --jinja on a free port, and runs vm/model's TestRealEngine against it. The
# model knows nothing: this proves the wire format, constrained decoding,
# tool calls, finish reasons and parameters against a real server, never
# answer quality. Not part of make test or CI.
#
# SKEIN_LLAMA_SERVER=/path/to/llama-server uses that binary instead of
# building one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work="$here/.work"
mkdir -p "$work"
cd "$here"

# apt_need CMD PACKAGE...: installs the packages when CMD is missing.
apt_need() {
	command -v "$1" >/dev/null 2>&1 && return
	shift
	echo "installing $*" >&2
	apt-get install -y "$@" >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y "$@" >/dev/null; }
}

# llama.cpp's source: the bundle node-llama-cpp ships, cloned into .work
# (a clone of another release is replaced).
if [ ! -f node_modules/node-llama-cpp/llama/gitRelease.bundle ]; then
	npm install --omit=optional --no-audit --no-fund --ignore-scripts
fi
bundle=node_modules/node-llama-cpp/llama/gitRelease.bundle
want=$(git bundle list-heads "$bundle" HEAD | awk '{print $1}')
src="$work/llama.cpp"
if [ -d "$src" ] && [ "$(git -C "$src" rev-parse HEAD 2>/dev/null)" != "$want" ]; then
	rm -rf "$src"
fi
if [ ! -d "$src" ]; then
	git -c advice.detachedHead=false clone -q "$bundle" "$src"
fi

server_bin=${SKEIN_LLAMA_SERVER:-}
if [ -z "$server_bin" ]; then
	server_bin="$src/build/bin/llama-server"
	if [ ! -x "$server_bin" ]; then
		apt_need cmake cmake
		apt_need g++ g++
		echo "building llama-server from llama.cpp $(git -C "$src" log -1 --format=%h) (once; about 45 minutes on two busy cores)" >&2
		# No network in the build: no curl, no Web UI from Hugging Face.
		cmake -S "$src" -B "$src/build" -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF \
			-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
			-DLLAMA_USE_PREBUILT_UI=OFF -DCMAKE_BUILD_TYPE=Release >"$work/build.log" 2>&1 ||
			{ tail -40 "$work/build.log" >&2; exit 1; }
		cmake --build "$src/build" --target llama-server -j "${SKEIN_LLAMA_JOBS:-$(nproc)}" >>"$work/build.log" 2>&1 ||
			{ tail -40 "$work/build.log" >&2; exit 1; }
	fi
fi
[ -x "$server_bin" ] || { echo "no llama-server at $server_bin" >&2; exit 1; }

py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
if ! "$py" -c 'import numpy' 2>/dev/null; then
	echo "installing python3-numpy" >&2
	apt-get install -y python3-numpy >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y python3-numpy >/dev/null; }
fi
PYTHONPATH="$src/gguf-py" "$py" make_gguf.py "$work/tiny.gguf"

# One slot (requests one at a time, as the test sends them) and a fixed
# seed; make_gguf.py says how the model behaves.
server=
stop_server() {
	if [ -n "$server" ]; then
		kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
		server=
	fi
}
trap stop_server EXIT
trap 'stop_server; exit 130' INT
trap 'stop_server; exit 143' TERM
"$server_bin" -m "$work/tiny.gguf" --host 127.0.0.1 --port 0 --jinja \
	-c 4096 -np 1 -t 2 --seed 7 --no-webui \
	>"$work/server.log" 2>&1 &
server=$!
url=
for _ in $(seq 1 600); do
	if ! kill -0 "$server" 2>/dev/null; then
		cat "$work/server.log" >&2
		echo "llama-server exited before it served" >&2
		exit 1
	fi
	addr=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/server.log" | head -1)
	if [ -n "$addr" ] && curl -fsS "$addr/health" >/dev/null 2>&1; then
		url="$addr/v1"
		break
	fi
	sleep 0.2
done
[ -n "$url" ] || { tail -40 "$work/server.log" >&2; echo "llama-server did not become healthy" >&2; exit 1; }
echo "llama-server $("$server_bin" --version 2>&1 | sed -n 's/^version: //p' | head -1) at $url" >&2

cd "$root"
SKEIN_LLM_ENGINE_URL="$url" ${GO:-go} test -count=1 -run '^TestRealEngine$' -v ./vm/model
