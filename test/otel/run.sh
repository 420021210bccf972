#!/usr/bin/env bash
# make test-otel: a run exported to a real Jaeger and read back through
# its query API (engine/telemetry's TestJaeger, build tag otel). Builds
# Jaeger v1.76.0 once from the Go module proxy into a cache (a long build:
# go install cannot build it, its go.mod has replace directives, so its
# module is copied and built in place). With SKEIN_SCREENSHOTS=DIR, the
# trace's page in Jaeger's UI is photographed there (Chromium: $CHROME,
# /usr/bin/chromium by default); Jaeger's Go module has no UI of its own
# (it serves a placeholder), so JAEGER_UI must name the build/ folder of
# a jaeger-ui checkout (v1.74.0: npm install && npm run build in
# packages/plexus, then in packages/jaeger-ui). Opt-in: not in make test
# or CI.
set -euo pipefail
GO=${GO:-go}
cache=${SKEIN_OTEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/skein-otel}
bin=$cache/jaeger-v1.76.0
if [ ! -x "$bin" ]; then
	mkdir -p "$cache"
	dir=$("$GO" mod download -json github.com/jaegertracing/jaeger@v1.76.0 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	src=$(mktemp -d)
	trap 'rm -rf "$src"' EXIT
	cp -r "$dir"/. "$src"
	chmod -R u+w "$src"
	echo "building Jaeger v1.76.0 into $bin (several minutes)" >&2
	(cd "$src" && "$GO" build -o "$bin" ./cmd/jaeger)
fi
if [ -n "${SKEIN_SCREENSHOTS:-}" ]; then
	SKEIN_SCREENSHOTS=$(cd "$SKEIN_SCREENSHOTS" 2>/dev/null && pwd || (mkdir -p "$SKEIN_SCREENSHOTS" && cd "$SKEIN_SCREENSHOTS" && pwd))
	export SKEIN_SCREENSHOTS
fi
JAEGER=$bin "$GO" test -tags otel -count=1 -run '^TestJaeger$' -v ./engine/telemetry/
