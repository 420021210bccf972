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

# Each compile and link goes through a wrapper that notes its CPU time,
# to say which packages the cold build's CPU goes to (the wrapper costs
# a bash start per tool run, a few ms).
cat >"$tmp/timetool" <<'WRAP'
#!/usr/bin/env bash
pkg=link; prev=
for a in "$@"; do [ "$prev" = -p ] && pkg=$a; prev=$a; done
TIMEFORMAT="%3U %3S ${1##*/} $pkg"
exec 3>&2
{ time "$@" 2>&3; } 2>>"$COLDBUILD_TOOLLOG"
WRAP
chmod +x "$tmp/timetool"
export COLDBUILD_TOOLLOG=$tmp/tools.log

echo "== cold: go run $* ./cmd/skein run $example"
TIMEFORMAT='cpu %3Us user + %3Ss sys, wall %3Rs'
time (go run -toolexec "$tmp/timetool" "$@" ./cmd/skein run "$example" >"$tmp/run.out" 2>&1) || { cat "$tmp/run.out"; exit 1; }
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== CPU of the compiles and the link, by module (user + sys seconds), largest first"
go list -deps -f '{{.ImportPath}} {{if .Module}}{{.Module.Path}}{{else}}(std){{end}}' "$@" ./cmd/skein >"$tmp/pkgmods"
awk -v pm="$tmp/pkgmods" '
	BEGIN { while ((getline l < pm) > 0) { split(l, f, " "); mod[f[1]] = f[2] } }
	{ m = ($4 in mod) ? mod[$4] : ($4 == "link" ? "(link)" : ($4 == "main" ? "github.com/skeinlang/skein" : "(std)")); cpu[m] += $1 + $2; total += $1 + $2 }
	END { for (m in cpu) printf "%8.1f s  %s\n", cpu[m], m; printf "%8.1f s  (all tools; the rest of the total is the go command: module downloads, hashing)\n", total }' "$tmp/tools.log" | sort -rn
echo "== the five packages that took most CPU"
awk '{ printf "%8.1f s  %s\n", $1 + $2, $4 }' "$tmp/tools.log" | sort -rn | head -5
echo "modules downloaded: $(find "$GOMODCACHE/cache/download" -name '*.zip' | wc -l)"
echo "module cache: $(du -sh "$GOMODCACHE" | cut -f1), build cache: $(du -sh "$GOCACHE" | cut -f1)"

go build "$@" -o "$tmp/skein" ./cmd/skein
go build "$@" -ldflags='-s -w' -o "$tmp/skein-sw" ./cmd/skein
mb() { awk -v n="$(stat -c %s "$1")" 'BEGIN { printf "%.1f MB", n / 1e6 }'; }
echo "binary: $(mb "$tmp/skein"), with -s -w: $(mb "$tmp/skein-sw")"

# Where the file's bytes go, by section: code, read-only data, the
# function tables (pclntab, for stacks and the collector), DWARF and the
# symbol table (the last two are what -s -w drops).
if command -v readelf >/dev/null; then
	echo "== sections of the plain binary"
	readelf -SW "$tmp/skein" | sed 's/\[ */[/' | awk '$1 ~ /^\[[0-9]/ && $3 != "NOBITS" && $2 != "NULL" { print $2, $6 }' |
		while read -r name hex; do echo "$name $((16#$hex))"; done |
		awk '{ k = $1 ~ /^\.debug/ ? "DWARF (.debug_*)" : $1 ~ /^\.(symtab|strtab)$/ ? "symbol table" : $1 ~ /^\.(text|rodata|gopclntab)$/ ? $1 : "other"; sz[k] += $2 }
			END { for (k in sz) printf "%8.1f MB  %s\n", sz[k] / 1e6, k }' | sort -rn
fi

# Linked code and data by module: each symbol goes to the longest module
# path its name starts with (the standard library when none does).
# Zeroed variables (.bss, .noptrbss) take no room in the file and are left
# out: crypto's 32 MB DRBG buffer and go-runewidth's 2.2 MB width table
# are such.
echo "== linked by module (go tool nm -size, file bytes: code and data), largest first"
go version -m "$tmp/skein" | awk '$1 == "dep" || $1 == "mod" { print $2 }' >"$tmp/mods"
bss=$(readelf -SW "$tmp/skein" 2>/dev/null | sed 's/\[ */[/' | awk '$2 == ".bss" { print $4 }')
go tool nm -size "$tmp/skein" | awk -v modfile="$tmp/mods" -v bss="${bss:-0}" '
	function hex(s,   i, n) { n = 0; s = tolower(s); for (i = 1; i <= length(s); i++) n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return n }
	BEGIN { while ((getline m < modfile) > 0) mods[m] = 1; bssStart = hex(bss) }
	NF >= 4 && (bssStart == 0 || hex($1) < bssStart) {
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
