#!/usr/bin/env bash
# What the README's first command costs on a machine with empty Go caches:
# the CPU and wall time of `go run ./cmd/skein run EXAMPLE` with a fresh
# module cache and build cache (modules come from the proxy), the size of
# both caches and the modules downloaded, then the skein binary's size
# (plain and with -ldflags='-s -w') and how much of it each module is.
#
#   bench/coldbuild.sh                    # the default skein
#   bench/coldbuild.sh -tags temporal     # the one with the Temporal engine
#
# Run it from anywhere in the repository; it leaves nothing behind. Each
# run is a cold build: minutes of CPU. Figures go in bench/NOTES.md.
set -euo pipefail
cd "$(dirname "$0")/.."
example=${EXAMPLE:-examples/build_fix_retry.star}
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
export GOMODCACHE=$tmp/mod GOCACHE=$tmp/cache GOFLAGS="-mod=mod -buildvcs=false"
export GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}

echo "== cold: go run $* ./cmd/skein run $example"
TIMEFORMAT='cpu %3Us user + %3Ss sys, wall %3Rs'
time (go run "$@" ./cmd/skein run "$example" >"$tmp/run.out" 2>&1) || { cat "$tmp/run.out"; exit 1; }
echo "modules downloaded: $(find "$GOMODCACHE/cache/download" -name '*.zip' | wc -l)"
echo "module cache: $(du -sh "$GOMODCACHE" | cut -f1), build cache: $(du -sh "$GOCACHE" | cut -f1)"

go build "$@" -o "$tmp/skein" ./cmd/skein
go build "$@" -ldflags='-s -w' -o "$tmp/skein-sw" ./cmd/skein
mb() { awk -v n="$(stat -c %s "$1")" 'BEGIN { printf "%.1f MB", n / 1e6 }'; }
echo "binary: $(mb "$tmp/skein"), with -s -w: $(mb "$tmp/skein-sw")"

# Linked code and data by module: each symbol goes to the longest module
# path its name starts with (the standard library when none does).
echo "== linked by module (go tool nm -size), largest first"
go version -m "$tmp/skein" | awk '$1 == "dep" || $1 == "mod" { print $2 }' >"$tmp/mods"
go tool nm -size "$tmp/skein" | awk -v modfile="$tmp/mods" '
	BEGIN { while ((getline m < modfile) > 0) mods[m] = 1 }
	NF >= 4 {
		name = $4
		sub(/^(type:|go:itab\.|go:)/, "", name); sub(/^\*/, "", name)
		best = ""
		for (m in mods)
			if ((index(name, m "/") == 1 || index(name, m ".") == 1) && length(m) > length(best))
				best = m
		if (best == "") best = "(std and runtime)"
		size[best] += $2
	}
	END { for (m in size) printf "%10.1f KB  %s\n", size[m] / 1e3, m }' | sort -rn
