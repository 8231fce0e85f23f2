#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README command 2: installs what is missing, builds (or reuses) the local
# control plane, checks formatting and vet, runs every test (unit,
# component, end-to-end against the real control plane), a short pass of
# every fuzz target, every benchmark (hack/bench.sh), the VM tier, the
# kubelet tier and the fresh-root tier (README's demo command on a Debian
# root that never saw the project), then prints a summary with each
# phase's wall time.
#
# Two cores are all CI has, and most phases leave one idle while they wait
# (for a control plane, a pod, a guest). So what later phases need is built
# beside the earlier ones at the lowest CPU priority (nice 19), taking only
# what they leave, from the moment the control plane is built: the kubelet
# and containerd, the kubelet tier's images, the VM tier's kernel and guest
# binaries, the fuzz pass's binaries and then a few of its targets fuzzed
# for minutes rather than seconds; and the fresh-root tier runs
# beside the checks, the tests and the fuzz pass from the start (its first
# minutes are downloads and dpkg). The benchmarks run alone after both,
# with the VM tier and the kubelet tier beside their long windows.
#
# FUZZTIME (default 10s) bounds each fuzz target; BENCH=0 skips benchmarks;
# FRESH_ROOT=0 skips the fresh-root tier.
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
work="$(mktemp -d)"
log="$work/go-test.log"
bg=()
# A phase that fails stops nothing after it, and the script exits 1 at the
# end. What runs in the background runs in a session of its own (setsid),
# so that it can be stopped whole, children and all, when the script ends
# early; TERM lets the fresh-root tier unmount what it mounted.
trap 'for p in "${bg[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done; wait; rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fresh=""
if [ "${FRESH_ROOT:-1}" != 0 ]; then
	echo "== fresh-root tier started beside the rest (its log at the end)"
	LIKEN_SKIP_DEPS=1 setsid hack/fresh-root-test.sh >"$work/fresh-root.log" 2>&1 &
	fresh=$!
	bg+=("$fresh")
fi

phase "control plane (built once into ~/.cache/liken)"
# Assigned, then exported: export would hide a failed build's status.
LIKEN_CONTROL_PLANE_BIN="$(hack/build-control-plane.sh | tail -n 1)"
export LIKEN_CONTROL_PLANE_BIN
# One set of build flags everywhere: the Go build cache is keyed on them,
# and the control plane was built with -trimpath.
flags=(-trimpath)
export LIKEN_IMAGES="$PWD/_output/images"
W="$work" setsid nice -n 19 bash -c 'hack/build-kubelet.sh >"$W/prebuild-node.log" 2>&1 &&
	PLATFORMS=linux/amd64 LIKEN_SKIP_DEPS=1 hack/build-images.sh "$LIKEN_IMAGES" >"$W/prebuild-images.log" 2>&1 &&
	LIKEN_SKIP_DEPS=1 hack/vm-test.sh -prepare >"$W/prebuild-vm.log" 2>&1' &
prebuild=$!
bg+=("$prebuild")
W="$work" setsid nice -n 19 bash -c 'hack/fuzz-pass.sh build "$W/fuzz" >/dev/null 2>&1
	hack/fuzz-pass.sh long "$W/fuzz" >"$W/fuzz-long.log" 2>&1' &
fuzzlong=$!
bg+=("$fuzzlong")

status=0
phase "gofmt, go vet"
unformatted="$(gofmt -l $(git ls-files '*.go'))"
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; status=1
fi
go vet "${flags[@]}" ./... || status=1

phase "golangci-lint (.golangci.yml), SPDX headers"
hack/lint.sh || status=1
hack/spdx.sh || true # lists files added without the header; does not fail

phase "go test"
go test "${flags[@]}" -count=1 -timeout 30m ./... 2>&1 | tee "$log" || status=$?

phase "fuzz (${FUZZTIME:-10s} each; a few for ${FUZZ_LONG_TIME:-4m}, beside the tests)"
hack/fuzz-pass.sh run "$work/fuzz" || status=1
echo "-- the longer targets, fuzzed beside the earlier phases:"
# They only fill time the earlier phases left idle: on a cold machine,
# where those phases kept both cores busy, the ones still fuzzing are told
# to stop now (SIGINT, which Go's fuzzing takes as the end of its time,
# keeping what it found) rather than hold up the phases after.
kill -INT -- "-$fuzzlong" 2>/dev/null || true
wait "$fuzzlong" || status=1
cat "$work/fuzz-long.log"

# The node's binaries and images, and the fresh-root tier, must be done
# before the phases that run alone begin, so that none of them shares the
# cores with a build or a demo.
phase "the kubelet tier's and the VM tier's builds (what is left of them)"
if ! wait "$prebuild"; then
	echo "building the kubelet, containerd, the images or the VM tier's guests failed:"
	tail -30 "$work"/prebuild-*.log
	status=1
fi

if [ -n "$fresh" ]; then
	phase "fresh-root tier (what is left of it; it began beside install-deps)"
	if wait "$fresh"; then
		sed -n '/^fresh-root tier: wall time/,$p' "$work/fresh-root.log"
	else
		echo "fresh-root tier failed:"; tail -60 "$work/fresh-root.log"; status=1
	fi
fi

# The VM tier and the kubelet tier run while the benchmarks' long windows
# watch (hack/bench.sh says why that moves no figure), each timed on its
# own in its output.
if [ "${BENCH:-1}" != 0 ]; then
	phase "benchmarks, with the VM tier and the kubelet tier beside their long windows"
	LIKEN_IMAGES_BUILT=1 hack/bench.sh -- hack/tiers.sh || status=1
else
	phase "VM tier, then the kubelet tier"
	LIKEN_IMAGES_BUILT=1 hack/tiers.sh || status=1
fi

phase
echo "== summary"
grep -E '^(ok|FAIL|---|panic:)' "$log" | grep -v -- '--- PASS' || true
passed=$(grep -c '^ok' "$log" || true)
failed=$(grep -c '^FAIL' "$log" || true)
echo "packages passed: $passed, failed: $failed"
echo "wall time of each phase:"
printf '%s\n' "${phases[@]}"
exit $status
