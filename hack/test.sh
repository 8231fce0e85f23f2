#!/usr/bin/env bash
# README command 2: installs what is missing, builds (or reuses) the local
# control plane, checks formatting and vet, runs every test (unit,
# component, end-to-end against the real control plane), a short pass of
# every fuzz target, the core's benchmarks, the VM tier and the kubelet
# tier, then prints a summary.
#
# FUZZTIME (default 10s) bounds each fuzz target; BENCH=0 skips benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh
hack/install-deps.sh
export LIKEN_CONTROL_PLANE_BIN="$(hack/build-control-plane.sh | tail -n 1)"
# One set of build flags everywhere: the Go build cache is keyed on them,
# and the control plane was built with -trimpath.
flags=(-trimpath)
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

echo "== gofmt, go vet"
unformatted="$(gofmt -l $(git ls-files '*.go'))"
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet "${flags[@]}" ./...

echo "== go test"
status=0
go test "${flags[@]}" -count=1 -timeout 30m ./... 2>&1 | tee "$log" || status=$?

echo "== fuzz (${FUZZTIME:-10s} each)"
# fuzz runs one target. Go 1.26's fuzzing coordinator can end a run that
# found nothing with a bare "context deadline exceeded" when -fuzztime
# expires on a loaded machine (go.dev/issue/75804, fixed in Go 1.27). A
# run that fails that way, having written no failing input, is run again
# once; any other failure, and a second such one, fails.
fuzz() {
	go test "${flags[@]}" -run '^$' -fuzz "^$2\$" -fuzztime "${FUZZTIME:-10s}" "$1" >"$log.fuzz" 2>&1
}
deadline_flake() {
	grep -q 'context deadline exceeded' "$log.fuzz" && ! grep -q 'Failing input written\|panic:' "$log.fuzz"
}
while read -r file; do
	pkg="./$(dirname "$file")"
	for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)' "$file" | cut -d' ' -f2); do
		if fuzz "$pkg" "$target"; then
			echo "ok    $pkg $target"
		elif deadline_flake && { echo "again $pkg $target (coordinator deadline, no failing input)"; fuzz "$pkg" "$target"; }; then
			echo "ok    $pkg $target"
		else
			echo "FAIL  $pkg $target"; tail -20 "$log.fuzz"; status=1
		fi
	done
done < <(git grep -l '^func Fuzz' -- '*_test.go')
rm -f "$log.fuzz"

if [ "${BENCH:-1}" != 0 ]; then
	echo "== benchmarks"
	echo "prepare of one claim through the gRPC socket, CDI and checkpoint fsyncs included (target: p99 under 20 ms):"
	go test "${flags[@]}" -run '^$' -bench 'PrepareGRPC' -benchtime 300x ./internal/dra/ 2>&1 | grep -E '^(Benchmark|ok|FAIL|--- FAIL|    )' || status=1
	echo "slice writes for 1,000 device changes in 10 s (bound: one write per settle window):"
	go test "${flags[@]}" -run '^$' -bench 'EventStorm' -benchtime 1x ./internal/dra/ 2>&1 | grep -E '^(Benchmark|ok|FAIL|--- FAIL|    )' || status=1
	echo "Bluetooth link change in the simulator to the ResourceSlice on the real API server, default settle window (target: p50 and max under 1.5 s + 200 ms):"
	go test "${flags[@]}" -run '^$' -bench 'BluetoothEventToSlice' -benchtime 1x ./test/e2e/ 2>&1 | grep -E '^(Benchmark|ok|FAIL|--- FAIL|    )' || status=1
	echo "bluetooth-operator binary's idle resident set once published and settled (target: rss-max under 25 MiB; manifest limit 64 MiB):"
	go test "${flags[@]}" -run '^$' -bench 'BluetoothOperatorIdleRSS' -benchtime 1x ./test/e2e/ 2>&1 | grep -E '^(Benchmark|ok|FAIL|--- FAIL|    )' || status=1
	echo "bondfetch's restore of 100 Secrets of about 1 MiB each from the real API server, under its soft memory limit (target: peak-MiB under its 64 MiB limit):"
	go test "${flags[@]}" -run '^$' -bench 'FetchHeap' -benchtime 1x ./internal/bonds/ 2>&1 | grep -E '^(Benchmark|ok|FAIL|--- FAIL|    )' || status=1
	echo "audio reconcile pass over 16 outputs (two recorded HDA cards of 8 HDMI PCMs each: cards read, endpoints named, devices formed against a graph):"
	go test "${flags[@]}" -run '^$' -bench 'AudioPass16Outputs' -benchmem ./internal/audio/ 2>&1 | grep -E '^(Benchmark|ok|FAIL|--- FAIL|    )' || status=1
	go test "${flags[@]}" -run '^$' -bench 'SpeakerConnectToSlice' -benchtime 5x ./internal/audio/ 2>&1 | grep -E '^(Benchmark|ok|FAIL|--- FAIL|    |speaker connected)' || status=1
	echo "audio-operator binary's idle resident set once published, on real PipeWire declared by its own declare mode (target: rss-max under 40 MiB; manifest limit 128 MiB with its pw-dump child):"
	go test "${flags[@]}" -run '^$' -bench 'AudioOperatorIdleRSS' -benchtime 1x ./test/e2e/ 2>&1 | grep -E '^(Benchmark|ok|FAIL|--- FAIL|    )' || status=1
	echo "capture container (audio-operator capture, which executes audio-capture) idle, then 10 s taps of a 44.1 kHz 4-channel sink on real PipeWire (targets: rss-max at most 16 MiB, its request; wav-cores 0.01 and opus-cores 0.05 of one core, recorder and encoder included; first byte through the container alone):"
	go test "${flags[@]}" -run '^$' -bench 'Capture(IdleRSS|Tap)' -benchtime 1x ./internal/capture/ 2>&1 | grep -E '^(Benchmark|ok|FAIL|--- FAIL|    )' || status=1
	echo "time to the first audio byte of a tap through audio-api, the capture container and pw-record (target: p50 under 200 ms):"
	go test "${flags[@]}" -run '^$' -bench 'AudioAPIFirstByte' -benchtime 10x ./test/e2e/ 2>&1 | grep -E '^(Benchmark|ok|FAIL|--- FAIL|    |time to)' || status=1
	echo "audio-api's resident set relaying four concurrent taps (target: under its 32 MiB request; limit 128 MiB):"
	go test "${flags[@]}" -run '^$' -bench 'AudioAPIRSS4Taps' -benchtime 1x ./test/e2e/ 2>&1 | grep -E '^(Benchmark|ok|FAIL|--- FAIL|    |audio-api relaying)' || status=1
fi

echo "== VM tier: the kernel-facing tests on a real kernel under qemu"
hack/vm-test.sh || status=1

echo "== kubelet tier: both bases as pods on a real kubelet and containerd"
LIKEN_SKIP_DEPS=1 hack/kubelet-test.sh || status=1

echo "== summary"
grep -E '^(ok|FAIL|---|panic:)' "$log" | grep -v -- '--- PASS' || true
passed=$(grep -c '^ok' "$log" || true)
failed=$(grep -c '^FAIL' "$log" || true)
echo "packages passed: $passed, failed: $failed"
exit $status
