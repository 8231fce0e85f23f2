#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every benchmark of the repository, each once as it is meant to run,
# and prints one table: the measure, the figure, its target and the hard
# limit (the memory limit of the container in deploy/*/operator.yaml, where
# there is one). A benchmark fails only past a hard limit or on a broken
# run, never on a target; this script exits 1 when one failed, after the
# table. hack/test.sh runs it unless BENCH=0.
#
# REST_WINDOW (default 2m) is how long the operators are watched at rest;
# the figure they are held to is ten minutes (REST_WINDOW=10m).
# TONE_WINDOW (default 2m) is how long PipeWire is watched playing the
# demo's tone (BenchmarkDemoToneCPU says why two minutes tell).
#
#   hack/bench.sh [-- CMD [ARG...]]
#
# CMD, when given, runs while the two long windows watch: they watch only
# their own processes' CPU time and leave the cores nearly idle, so
# hack/test.sh runs the VM tier and the kubelet tier there instead of
# after them. CMD's output follows the windows' and its failure fails
# this script.
set -uo pipefail
beside=()
if [ $# -gt 0 ]; then
	[ "$1" = -- ] && [ $# -gt 1 ] || { echo "usage: hack/bench.sh [-- CMD [ARG...]]" >&2; exit 2; }
	shift
	beside=("$@")
fi
cd "$(dirname "$0")/.."
. hack/env.sh
if [ -z "${LIKEN_CONTROL_PLANE_BIN:-}" ]; then
	LIKEN_CONTROL_PLANE_BIN="$(hack/build-control-plane.sh | tail -n 1)" || exit 1
fi
export LIKEN_CONTROL_PLANE_BIN
rest_window="${REST_WINDOW:-2m}"
tone_window="${TONE_WINDOW:-2m}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
status=0
rows="$out/rows"
: >"$rows"

# bench KEY PKG REGEX BENCHTIME [ARG...]: runs the benchmarks matching
# REGEX in PKG into $out/KEY and says whether they passed. ARGs go after
# -args, to the test binary.
bench() {
	local key="$1" pkg="$2" regex="$3" benchtime="$4"
	shift 4
	local args=()
	[ $# -eq 0 ] || args=(-args "$@")
	echo "-- $key ($pkg, -bench '$regex', -benchtime $benchtime)"
	if go test -trimpath -run '^$' -bench "$regex" -benchtime "$benchtime" -timeout 30m "$pkg" "${args[@]}" >"$out/$key" 2>&1; then
		grep -E '^Benchmark' "$out/$key" || true
	else
		echo "FAIL  $key"
		grep -E -A20 -- '--- FAIL|^panic:|FAIL' "$out/$key" | head -40
		status=1
		return 1
	fi
}

# m KEY BENCH UNIT: the figure benchmark BENCH reported in UNIT in KEY's
# run (its last, if several), or "-" when it reported none.
m() {
	[ -f "$out/$1" ] || { echo -; return; }
	# A benchmark's figures follow its name on the same line, or on a
	# later one when the code under test logged in between.
	awk -v b="$2" -v u="$3" '$1 ~ "^Benchmark" { cur = ($1 ~ "^Benchmark"b"(-[0-9]+)?$") } /^(ok|PASS|FAIL)/ { cur = 0 }
		cur { for (i = 2; i <= NF; i++) if ($i == u) v = $(i-1) }
		END { print (v == "" ? "-" : v) }' "$out/$1"
}

# row MEASURE FIGURE TARGET LIMIT: one line of the table.
row() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$rows"; }

bench dra ./internal/dra/ 'PrepareGRPC' 300x
bench storm ./internal/dra/ 'SliceWritesEventStorm' 1x
bench bt-latency ./test/e2e/ 'BluetoothEventToSlice' 1x
bench bt-rss ./test/e2e/ 'BluetoothOperatorIdleRSS' 1x
bench pass ./internal/audio/ 'AudioPass16Outputs' 1s -test.benchmem
bench speaker ./internal/audio/ 'SpeakerConnectToSlice' 5x
bench share ./internal/audio/ 'PrepareSixteenthShare' 200x
bench audio-rss ./test/e2e/ 'AudioOperatorIdleRSS' 1x
bench shared-rss ./test/e2e/ 'AudioOperatorSharedRSS' 1x
bench probes ./test/e2e/ 'AudioProbes' 1x
bench capture ./internal/capture/ 'Capture(IdleRSS|Tap)' 1x
bench api-ttfb ./test/e2e/ 'AudioAPIFirstByte' 10x
bench api-rss ./test/e2e/ 'AudioAPIRSS4Taps' 1x
bench bondfetch ./cmd/bluetooth-bondfetch/ 'BondfetchRestore50' 5x
bench fetch-heap ./internal/bonds/ 'FetchHeap' 1x
bench fleet ./test/e2e/ 'FleetColdStart' 1x
bench relay ./internal/inputrelay/ 'RelayCopy' 1s
# The two long windows run side by side: each watches only its own
# processes (the operators at rest; PipeWire playing a tone), and neither
# gives the cores much to do while it watches, so each saves the other's
# minutes without moving the other's figure.
bench rest ./test/e2e/ 'OperatorsAtRest' 1x -rest-window="$rest_window" >"$out/rest.console" 2>&1 &
rest_pid=$!
bench tone ./test/e2e/ 'DemoToneCPU' 1x -tone-window="$tone_window" >"$out/tone.console" 2>&1 &
tone_pid=$!
if [ ${#beside[@]} -gt 0 ]; then
	echo "-- beside the windows: ${beside[*]}"
	"${beside[@]}" || { echo "FAIL  ${beside[*]}"; status=1; }
fi
wait "$rest_pid" || status=1
cat "$out/rest.console"
wait "$tone_pid" || status=1
cat "$out/tone.console"

row "claim prepare over gRPC, p50 / p99" "$(m dra PrepareGRPC p50-ms) / $(m dra PrepareGRPC p99-ms) ms" "p99 <= 20 ms" "-"
row "slice writes, 1,000 device changes in 10 s" "$(m storm SliceWritesEventStorm writes)" "<= $(m storm SliceWritesEventStorm bound) (one a settle window)" "-"
row "Bluetooth link change to slice, p50 / max" "$(m bt-latency BluetoothEventToSlice p50-ms) / $(m bt-latency BluetoothEventToSlice max-ms) ms" "<= 1700 ms" "-"
row "audio prepare of the 16th share of one output, p50 / p99" "$(m share PrepareSixteenthShare p50-ms) / $(m share PrepareSixteenthShare p99-ms) ms" "p99 <= 20 ms" "-"
row "speaker connect to slice, p50 / max" "$(m speaker SpeakerConnectToSlice p50-ms) / $(m speaker SpeakerConnectToSlice max-ms) ms" "<= 1700 ms" "-"
row "Bluetooth operator idle VmRSS, 8 bonds" "$(m bt-rss BluetoothOperatorIdleRSS rss-max-MiB) MiB (anon $(m bt-rss BluetoothOperatorIdleRSS anon-max-MiB), file $(m bt-rss BluetoothOperatorIdleRSS file-max-MiB); peak $(m bt-rss BluetoothOperatorIdleRSS hwm-MiB))" "<= 20 MiB" "64 MiB"
row "audio pass over 16 outputs" "$(m pass AudioPass16Outputs ns/op) ns, $(m pass AudioPass16Outputs B/op) B" "-" "-"
row "audio operator container idle, 16 outputs" "$(m audio-rss AudioOperatorIdleRSS container-rss-max-MiB) MiB (operator $(m audio-rss AudioOperatorIdleRSS rss-max-MiB): anon $(m audio-rss AudioOperatorIdleRSS anon-max-MiB), file $(m audio-rss AudioOperatorIdleRSS file-max-MiB); pw-dump $(m audio-rss AudioOperatorIdleRSS children-rss-max-MiB))" "<= 40 MiB" "128 MiB"
row "audio operator container, every shareable device 4 shares" "$(m shared-rss AudioOperatorSharedRSS container-rss-max-MiB) MiB with $(m shared-rss AudioOperatorSharedRSS shares) shares of $(m shared-rss AudioOperatorSharedRSS outputs) devices (operator $(m shared-rss AudioOperatorSharedRSS rss-max-MiB): anon $(m shared-rss AudioOperatorSharedRSS anon-max-MiB), file $(m shared-rss AudioOperatorSharedRSS file-max-MiB))" "<= 40 MiB" "128 MiB"
row "graph-answers probe, CPU p50 / max, peak RSS" "$(m probes AudioProbes graph-answers-cpu-p50-ms) / $(m probes AudioProbes graph-answers-cpu-max-ms) ms, $(m probes AudioProbes graph-answers-rss-max-MiB) MiB" "<= 20 ms, <= 12 MiB" "128 MiB"
row "endpoints-registered probe, CPU p50 / max, peak RSS" "$(m probes AudioProbes endpoints-registered-cpu-p50-ms) / $(m probes AudioProbes endpoints-registered-cpu-max-ms) ms, $(m probes AudioProbes endpoints-registered-rss-max-MiB) MiB" "<= 20 ms, <= 12 MiB" "128 MiB"
row "capture container idle VmRSS" "$(m capture CaptureIdleRSS rss-max-MiB) MiB (anon $(m capture CaptureIdleRSS anon-max-MiB), file $(m capture CaptureIdleRSS file-max-MiB))" "<= 16 MiB" "64 MiB"
row "capture tap CPU while it runs, wav / opus" "$(m capture CaptureTap wav-cores) / $(m capture CaptureTap opus-cores) cores (whole 10 s tap at reap $(m capture CaptureTap wav-tap-cores) / $(m capture CaptureTap opus-tap-cores), its start $(m capture CaptureTap wav-start-ms) / $(m capture CaptureTap opus-start-ms) ms once)" "<= 0.01 / 0.05 cores" "-"
row "first audio byte through audio-api, p50" "$(m api-ttfb AudioAPIFirstByte p50-ms) ms" "<= 200 ms" "-"
row "audio-api relaying 4 taps, VmRSS" "$(m api-rss AudioAPIRSS4Taps rss-MiB) MiB" "<= 32 MiB" "128 MiB"
row "bondfetch restoring 50 bonds, peak RSS" "$(m bondfetch BondfetchRestore50 rss-peak-MiB) MiB ($(m bondfetch BondfetchRestore50 cpu-ms) ms CPU)" "<= 16 MiB" "64 MiB"
row "bondfetch's fetch of 100 Secrets of ~1 MiB, peak RSS / heap" "$(m fetch-heap FetchHeap peak-MiB) / $(m fetch-heap FetchHeap peak-heap-MiB) MiB" "< 64 MiB" "64 MiB"
row "API requests at rest beyond watches ($rest_window), Bluetooth / audio" "$(m rest OperatorsAtRest bluetooth-operator-requests) / $(m rest OperatorsAtRest audio-operator-requests)" "0 (over 10 min)" "-"
row "CPU at rest, both operators ($rest_window)" "$(m rest OperatorsAtRest cpu-percent-of-a-core) % of a core (Bluetooth $(m rest OperatorsAtRest bluetooth-cpu-percent), audio $(m rest OperatorsAtRest audio-cpu-percent))" "<= 0.2 %" "-"
row "PipeWire playing the demo's tone ($tone_window)" "$(m tone DemoToneCPU pipewire-cpu-percent) % of a core (largest 30 s $(m tone DemoToneCPU pipewire-cpu-max-percent) %); pace $(m tone DemoToneCPU pace-first) first 30 s, $(m tone DemoToneCPU pace-last) last" "< 5 %, pace 1.0" "-"
row "input relay's own copy of a pad's frame (decode, follow, encode)" "$(m relay RelayCopy us/frame) µs" "<= 20 µs" "-"
row "fleet cold start, 100 nodes x 2 drivers, 800 Sinks" "$(m fleet FleetColdStart converge-s) s; $(m fleet FleetColdStart 429s) 429s; $(m fleet FleetColdStart 409s-resolved) conflicts resolved, $(m fleet FleetColdStart write-retries) writes made again, $(m fleet FleetColdStart unresolved-errors) unresolved" "<= 30 s, 0 429s, 0 unresolved" "-"

echo "== benchmark figures"
awk -F'\t' 'BEGIN { print "measure\tfigure\ttarget\tlimit" } { print }' "$rows" |
	awk -F'\t' '{ for (i = 1; i <= NF; i++) { cell[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NR }
		END { for (r = 1; r <= n; r++) { line = ""; for (i = 1; i <= 4; i++) line = line sprintf("%-" w[i] "s", cell[r, i]) (i < 4 ? "  " : ""); print line } }'
exit $status
