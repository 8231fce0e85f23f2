#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README command 2: installs what is missing, builds (or reuses) the local
# control plane, checks formatting and vet, runs every test (unit,
# component, end-to-end against the real control plane), a short pass of
# every fuzz target, every benchmark (hack/bench.sh), the VM tier and the kubelet
# tier, then prints a summary.
#
# FUZZTIME (default 10s) bounds each fuzz target; BENCH=0 skips benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh
# phase NAME: closes the phase under way (its wall time goes to the
# summary) and opens NAME; "phase" alone closes the last one.
phases=()
phase_name="install-deps"
phase_began=$(date +%s)
phase() {
	phases+=("$(printf '%6d s  %s' $(( $(date +%s) - phase_began )) "$phase_name")")
	phase_name="${1:-}"
	phase_began=$(date +%s)
	[ -z "$phase_name" ] || echo "== $phase_name"
}
echo "== install-deps"
hack/install-deps.sh
phase "control plane (built once into ~/.cache/liken)"
export LIKEN_CONTROL_PLANE_BIN="$(hack/build-control-plane.sh | tail -n 1)"
# One set of build flags everywhere: the Go build cache is keyed on them,
# and the control plane was built with -trimpath.
flags=(-trimpath)
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

status=0
phase "gofmt, go vet"
unformatted="$(gofmt -l $(git ls-files '*.go'))"
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet "${flags[@]}" ./...

phase "golangci-lint (.golangci.yml), SPDX headers"
hack/lint.sh || status=1
hack/spdx.sh || true # lists files added without the header; does not fail

phase "go test"
go test "${flags[@]}" -count=1 -timeout 30m ./... 2>&1 | tee "$log" || status=$?

phase "fuzz (${FUZZTIME:-10s} each)"
# fuzz runs one target, on the toolchain hack/env.sh names for fuzzing.
fuzz() {
	GOTOOLCHAIN="$LIKEN_FUZZ_TOOLCHAIN" go test "${flags[@]}" -run '^$' -fuzz "^$2\$" -fuzztime "${FUZZTIME:-10s}" "$1" >"$log.fuzz" 2>&1
}
while read -r file; do
	pkg="./$(dirname "$file")"
	for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)' "$file" | cut -d' ' -f2); do
		if fuzz "$pkg" "$target"; then
			echo "ok    $pkg $target"
		else
			echo "FAIL  $pkg $target"; tail -20 "$log.fuzz"; status=1
		fi
	done
done < <(git grep -l '^func Fuzz' -- '*_test.go')
rm -f "$log.fuzz"

if [ "${BENCH:-1}" != 0 ]; then
	phase "benchmarks"
	hack/bench.sh || status=1
fi

phase "VM tier: the kernel-facing tests on a real kernel under qemu"
hack/vm-test.sh || status=1

phase "kubelet tier: both bases as pods on a real kubelet and containerd"
LIKEN_SKIP_DEPS=1 hack/kubelet-test.sh || status=1

phase
echo "== summary"
grep -E '^(ok|FAIL|---|panic:)' "$log" | grep -v -- '--- PASS' || true
passed=$(grep -c '^ok' "$log" || true)
failed=$(grep -c '^FAIL' "$log" || true)
echo "packages passed: $passed, failed: $failed"
echo "wall time of each phase:"
printf '%s\n' "${phases[@]}"
exit $status
