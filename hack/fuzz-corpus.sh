#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Moves what a fuzzing campaign (hack/fuzz-campaign.sh) found into the
# committed seed corpus, keeping it small: of the inputs Go's fuzzer kept
# for a target in its cache (go env GOCACHE)/fuzz, those of at most
# FUZZMAXBYTES (default 2048) are candidates, and a greedy set cover
# over the statement blocks each one reaches picks at most FUZZMAXFILES
# (default 24) of them into <package>/testdata/fuzz/<Target>/, each one
# reaching a block that the target's own seeds (f.Add), the inputs
# already committed and the ones picked before it do not. A target with
# nothing committed whose finds reach no new block gets the smallest
# FUZZMINFILES (default 8) of them, so that every target's corpus holds
# what its fuzzer found interesting (finer than blocks: edges, compared
# values). Inputs already committed are kept: a failing input Go wrote
# there is a regression test.
#
# Prints one line per target: candidates, files added, the statement
# coverage of the target's package before and after, and after, the
# coverage of the package's files the corpus reaches at all (the
# parser's own files, in a package that holds more than the parser).
#
#   hack/fuzz-corpus.sh                         # every target
#   hack/fuzz-corpus.sh ./internal/captureapi   # the targets under one package
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh
maxbytes="${FUZZMAXBYTES:-2048}"
maxfiles="${FUZZMAXFILES:-24}"
minfiles="${FUZZMINFILES:-8}"
filter="${1:-./}"
module="$(go list -m)"
cache="$(go env GOCACHE)/fuzz"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# covered runs the test binary on one subtest pattern and prints the
# blocks it reached, "file:start,end statements" one a line.
covered() {
	rm -f "$work/p.out"
	(cd "$dir" && "$work/t.test" -test.run "$1" -test.coverprofile "$work/p.out" >/dev/null 2>&1) || true
	[ -f "$work/p.out" ] && awk 'NR > 1 && $3 > 0 { print $1, $2 }' "$work/p.out"
	return 0
}
# percent prints the statement coverage of the blocks in file $1 against
# the profile's total.
percent() {
	awk 'NR == FNR { total += $2; s[$1] = $2; next }
		!seen[$1]++ { n += s[$1] }
		END { if (total) printf "%.1f%%", 100 * n / total; else printf "-" }' "$work/all.out" "$1"
}
# infiles is percent over the profile's files that file $1 reaches.
infiles() {
	awk 'NR == FNR { s[$1] = $2; f = $1; sub(/:.*/, "", f); file[$1] = f; next }
		!seen[$1]++ { n += s[$1]; reached[file[$1]] = 1 }
		END { for (b in s) if (file[b] in reached) total += s[b]
			if (total) printf "%.1f%%", 100 * n / total; else printf "-" }' "$work/all.out" "$1"
}

printf '%-28s %-26s %10s %6s %8s %8s %8s\n' package target candidates added before after in-files
while read -r file; do
	dir="$(dirname "$file")"
	case "./$dir/" in "${filter%/}/"*) ;; *) continue ;; esac
	go test -trimpath -c -cover -covermode=set -o "$work/t.test" "./$dir" >/dev/null
	for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)' "$file" | cut -d' ' -f2); do
		dest="$dir/testdata/fuzz/$target"
		mkdir -p "$dest"
		committed="$(find "$dest" -type f | wc -l)"
		# The base: seeds and what is committed.
		covered "^$target\$" >"$work/base"
		awk 'NR > 1 { print $1, $2 }' "$work/p.out" >"$work/all.out"
		before="$(percent "$work/base")"
		: >"$work/cands"
		: >"$work/copied"
		for f in "$cache/$module/$dir/$target"/*; do
			[ -f "$f" ] || continue
			name="$(basename "$f")"
			size="$(stat -c %s "$f")"
			[ -e "$dest/$name" ] || [ "$size" -gt "$maxbytes" ] && continue
			cp "$f" "$dest/$name"
			echo "$name" >>"$work/copied"
			covered "^$target\$/^$name\$" | sed "s|^|$name $size |" >>"$work/cands"
		done
		# Greedy set cover: the candidate reaching the most blocks not yet
		# reached, the smaller on a tie, until none adds any.
		awk -v max="$maxfiles" 'NR == FNR { have[$1] = 1; next }
			{ blk = $3; if (!(blk in have)) { gain[$1, blk] = 1; size[$1] = $2; names[$1] = 1 } }
			END {
				for (k = 0; k < max; k++) {
					best = ""; bestn = 0
					for (c in names) {
						n = 0
						for (key in gain) { split(key, p, SUBSEP); if (p[1] == c && !(p[2] in have)) n++ }
						if (n > bestn || (n == bestn && n > 0 && size[c] < size[best])) { best = c; bestn = n }
					}
					if (bestn == 0) break
					print best
					for (key in gain) { split(key, p, SUBSEP); if (p[1] == best) have[p[2]] = 1 }
					delete names[best]
				}
			}' "$work/base" "$work/cands" >"$work/keep"
		if [ "$committed" = 0 ] && [ ! -s "$work/keep" ]; then
			awk '!seen[$1]++ { print $2, $1 }' "$work/cands" | sort -n | head -n "$minfiles" | cut -d' ' -f2 >"$work/keep"
		fi
		candidates=0 added=0
		for name in $(cat "$work/copied"); do
			candidates=$((candidates + 1))
			if grep -qx "$name" "$work/keep"; then added=$((added + 1)); else rm -f "$dest/$name"; fi
		done
		rmdir "$dest" 2>/dev/null || true
		covered "^$target\$" >"$work/base"
		printf '%-28s %-26s %10s %6s %8s %8s %8s\n' "$dir" "$target" "$candidates" "$added" "$before" "$(percent "$work/base")" "$(infiles "$work/base")"
	done
done < <(git grep -l '^func Fuzz' -- '*_test.go' | sort)
