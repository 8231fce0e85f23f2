#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The long form of the fuzzing that hack/test.sh runs briefly: every fuzz
# target in the module (every `func Fuzz...` in a _test.go file), each for
# FUZZTIME (default 10m), one after the other. Seed corpora live beside
# each target in testdata/fuzz/<Target>/ and are committed; a failing
# input Go writes there is a regression test from then on. New
# interesting inputs stay in Go's own cache (go env GOCACHE)/fuzz, so a
# second campaign continues where the first stopped.
#
# Prints one line per target: its execs, the interesting inputs in its
# corpus (Go's coverage-guided count), the statement coverage of the
# target's package that its committed corpus alone reaches (go test -cover
# running the target's seeds and testdata/fuzz/<Target>, no fuzzing), and
# the result, then a summary. Exits 1 if any target found a crash.
#
#   hack/fuzz-campaign.sh                 # every target, 10 minutes each
#   FUZZTIME=30s hack/fuzz-campaign.sh    # a quick pass
#   FUZZPARALLEL=1 hack/fuzz-campaign.sh  # one fuzzing worker (default: one per CPU)
#   FUZZMINIMIZETIME=3s hack/fuzz-campaign.sh
#   hack/fuzz-campaign.sh ./internal/captureapi   # the targets under one package
#
# FUZZMINIMIZETIME bounds how long Go minimizes each new interesting
# input (go test -fuzzminimizetime, default 60s). A target seeded with a
# large real capture (an alsa-info report, a pw-dump) otherwise spends
# most of a short run minimizing, with its exec count standing still.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh
time="${FUZZTIME:-10m}"
parallel=()
if [ -n "${FUZZPARALLEL:-}" ]; then parallel=(-parallel "$FUZZPARALLEL"); fi
if [ -n "${FUZZMINIMIZETIME:-}" ]; then parallel+=(-fuzzminimizetime "$FUZZMINIMIZETIME"); fi
filter="${1:-./}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

crashes=0 targets=0
printf '%-28s %-26s %12s %11s %8s  %s\n' package target execs interesting coverage result
while read -r file; do
	pkg="./$(dirname "$file")"
	case "$pkg/" in "${filter%/}/"*) ;; *) continue ;; esac
	for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)' "$file" | cut -d' ' -f2); do
		targets=$((targets + 1))
		result=ok
		GOTOOLCHAIN="$LIKEN_FUZZ_TOOLCHAIN" go test -trimpath "${parallel[@]}" -run '^$' -fuzz "^$target\$" -fuzztime "$time" "$pkg" >"$log" 2>&1 || result=FAIL
		# Go prints "fuzz: elapsed: 10s, execs: 123 (12/sec), new interesting: 4 (total: 20)".
		last="$(grep -E '^fuzz: elapsed' "$log" | tail -1)"
		execs="$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")"
		total="$(sed -nE 's/.*\(total: ([0-9]+)\).*/\1/p' <<<"$last")"
		if [ "$result" = FAIL ]; then
			if grep -q 'Failing input written' "$log"; then
				crashes=$((crashes + 1))
				result="CRASH: $(grep -m1 'Failing input written' "$log" | sed 's/.*written to //')"
			else
				crashes=$((crashes + 1))
				result="FAIL: $(grep -m1 -E 'panic:|FAIL|Error' "$log" || true)"
			fi
		fi
		# "coverage: 61.2% of statements" from the committed corpus alone.
		cover="$(go test -trimpath -count=1 -run "^$target\$" -cover "$pkg" 2>&1 |
			sed -nE 's/.*coverage: ([0-9.]+%) of statements.*/\1/p' | head -1)"
		printf '%-28s %-26s %12s %11s %8s  %s\n' "${pkg#./}" "$target" "${execs:--}" "${total:--}" "${cover:--}" "$result"
	done
done < <(git grep -l '^func Fuzz' -- '*_test.go' | sort)
echo "targets: $targets, crashes: $crashes, each for $time"
[ "$crashes" = 0 ]
