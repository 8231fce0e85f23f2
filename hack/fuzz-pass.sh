#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The short fuzz pass of hack/test.sh: every fuzz target of the repository
# for FUZZTIME (default 10s), on the toolchain hack/env.sh names for
# fuzzing. Each package's test binary is built once with the fuzzer's
# instrumentation (go test -c -fuzz) and run once per target of it, in the
# package's directory and with the fuzz cache go test would give it, so a
# package's targets share one build and one link instead of one each.
#
#   hack/fuzz-pass.sh build DIR   # only build the binaries into DIR
#   hack/fuzz-pass.sh run DIR     # build what is missing, then run every target
#   hack/fuzz-pass.sh long DIR    # a few targets, chosen from the commit, for longer
#
# FUZZ_JOBS (default: the number of cores) is how many targets fuzz at
# once, each with one worker.
#
# "build", then "long", is what hack/test.sh starts in the background
# while the tests run, at the lowest CPU priority: the long targets take
# only the time the tests leave idle, and a crash there fails the run
# like one in "run". SIGINT ends the pass early: the targets fuzzing then
# stop as at the end of their time (Go's fuzzing takes SIGINT so, and
# still reports a crash it found), and the ones not begun are listed as
# not reached. "run" prints "ok" or "FAIL" per target,
# the last lines of a failure and its input, and exits 1 if one failed; a
# crash's input is written to <package>/testdata/fuzz/<Target>/ as go test
# writes it.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh
mode="${1:-}" dir="${2:-}"
case "$mode" in build|run|long) ;; *) echo "usage: hack/fuzz-pass.sh build|run|long DIR" >&2; exit 2 ;; esac
[ -n "$dir" ] || { echo "hack/fuzz-pass.sh: no DIR" >&2; exit 2; }
# SIGINT (see above) ends the pass at the next step, in every mode.
stopped=false
trap 'stopped=true' INT
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
# The binaries in DIR are reused only for the tree they were built from:
# the commit, the changes to it and the untracked files, hashed into a
# stamp. Another tree empties DIR first.
stamp="$( { git rev-parse HEAD; git diff HEAD; git ls-files -o --exclude-standard -z | xargs -0 -r sha256sum; } | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$dir/.tree" 2>/dev/null)" != "$stamp" ]; then
	rm -f "$dir"/*.test "$dir"/*.err
	echo "$stamp" >"$dir/.tree"
fi
export GOTOOLCHAIN="$LIKEN_FUZZ_TOOLCHAIN"
module="$(go list -m)"
fuzzcache="$(go env GOCACHE)/fuzz"

# The packages with fuzz targets, one a line, relative to the root: from
# the working tree, so a test file not yet added to git counts too.
packages() {
	grep -rl --include='*_test.go' --exclude-dir=.git --exclude-dir=_output --exclude-dir=testdata '^func Fuzz' . |
		xargs -n1 dirname | sed 's|^\./||' | sort -u
}
# binary PKG: where PKG's instrumented test binary goes.
binary() { echo "$dir/${1//\//_}.test"; }

# build PKG: builds PKG's binary unless it is there; a failed build leaves
# its output in the binary's place with .err appended.
build() {
	local bin
	bin="$(binary "$1")"
	[ -x "$bin" ] && return 0
	# "run" may reach a package the background "build" is building.
	exec 8>"$bin.lock"
	flock 8
	if [ -x "$bin" ]; then exec 8>&-; return 0; fi
	if go test -trimpath -c -fuzz=. -o "$bin.tmp" "./$1" >"$bin.err" 2>&1; then
		mv "$bin.tmp" "$bin"
		rm -f "$bin.err"
		exec 8>&-
	else
		exec 8>&-
		return 1
	fi
}

if [ "$mode" = build ]; then
	failed=0
	for pkg in $(packages); do
		$stopped && break
		build "$pkg" || failed=1
	done
	exit $failed
fi

# run_target N PKG TARGET TIME: fuzzes TARGET of PKG with one worker for
# TIME and writes its verdict to $dir/$mode.N: on a failure its last
# lines and the failing input, which Go wrote under the package's
# testdata/fuzz/TARGET/.
run_target() {
	local n="$1" pkg="$2" target="$3" time="$4" log="$dir/$mode.$1.log" input
	if (cd "$pkg" && "$(binary "$pkg")" -test.run='^$' -test.fuzz="^$target\$" \
		-test.fuzztime="$time" -test.parallel=1 \
		-test.fuzzcachedir="$fuzzcache/$module/$pkg" \
		-test.paniconexit0 -test.timeout=30m) >"$log" 2>&1 &&
		# A target the binary does not hold (a build tag left its file
		# out) is "no fuzz tests to fuzz", which testing passes.
		! grep -q '^testing: warning: no fuzz tests to fuzz' "$log"; then
		echo "ok    ./$pkg $target ($time)" >"$dir/$mode.$n"
	else
		{
			echo "FAIL  ./$pkg $target ($time)"; tail -20 "$log"
			input="$(grep -oE 'testdata/fuzz/[A-Za-z0-9_]+/[0-9a-f]+' "$log" | tail -n 1)"
			if [ -n "$input" ] && [ -f "$pkg/$input" ]; then
				echo "the failing input, $pkg/$input (commit it with the fix):"; cat "$pkg/$input"
			fi
		} >"$dir/$mode.$n"
	fi
}

# Every target as "PKG TARGET", in a stable order; a package whose binary
# does not build is reported and left out.
status=0
all="$dir/$mode.targets"
: >"$all"
for pkg in $(packages); do
	$stopped && break
	if ! build "$pkg"; then
		echo "FAIL  ./$pkg (build)"; tail -20 "$(binary "$pkg").err"; status=1
		continue
	fi
	for target in $(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)' "$pkg"/*_test.go | cut -d' ' -f2); do
		echo "$pkg $target" >>"$all"
	done
done
total=$(wc -l <"$all")
# "long" takes FUZZ_LONG_TARGETS (default 6) consecutive targets, starting
# at a place chosen from the commit under test, for FUZZ_LONG_TIME
# (default 4m) each: over successive commits every target gets its turn.
picked="$all"
time="${FUZZTIME:-10s}"
if [ "$mode" = long ]; then
	count="${FUZZ_LONG_TARGETS:-6}"
	time="${FUZZ_LONG_TIME:-4m}"
	first=$(( 0x$(git rev-parse --short=7 HEAD) % (total > 0 ? total : 1) ))
	picked="$dir/long.picked"
	{ cat "$all" "$all"; } | sed -n "$((first + 1)),$((first + count))p" >"$picked"
fi

# The targets run FUZZ_JOBS at a time (default: one per core), each with
# one fuzzing worker, so every target still has its time of a core while
# the pass takes 1/FUZZ_JOBS of the wall time it took one target at a
# time with a worker per core.
jobs="${FUZZ_JOBS:-$(nproc)}"
rm -f "$dir/$mode".[0-9]*
n=0
while read -r pkg target; do
	$stopped && break
	n=$((n + 1))
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
	if $stopped; then
		echo "not reached ./$pkg $target (the pass was stopped)" >"$dir/$mode.$n"
		continue
	fi
	run_target "$n" "$pkg" "$target" "$time" &
done <"$picked"
# A SIGINT interrupts wait; the targets it reached still run to their end.
while [ -n "$(jobs -rp)" ]; do wait || true; done
for i in $(seq 1 "$n"); do
	cat "$dir/$mode.$i"
	grep -qE '^(ok |not reached )' "$dir/$mode.$i" || status=1
done
echo "fuzz targets: $n of $total, each for $time with one worker, $jobs at a time; $( [ $status = 0 ] && echo "all ok" || echo "some FAILED" )"
exit $status
