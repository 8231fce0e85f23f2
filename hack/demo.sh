#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README command 1: installs what is missing, builds (or reuses) the local
# control plane, and runs the demo: a real control plane, one simulated
# node, the drivers this repository has, one claim allocated and prepared.
# Arguments go to the demo, e.g. `hack/demo.sh -wait` to keep the cluster up.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh
hack/install-deps.sh
bin="$(hack/build-control-plane.sh | tail -n 1)"
out="${LIKEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/liken}/bin"
mkdir -p "$out"
# Built and exec'd rather than `go run`, so that Ctrl-C reaches the demo and
# it stops the control plane it started. Without cgo, which the demo does
# not use: a machine without a C compiler (a fresh Debian has none) builds
# the same thing as one with it, so the fresh-root tier's build finds this
# host's in the Go build cache (hack/fresh-root-test.sh).
with_progress "building the demo (test/e2e/cmd/demo) into $out/liken-demo (the first build compiles client-go and the drivers: minutes on 2 cores; later ones seconds)" \
	env CGO_ENABLED=0 go build -trimpath -o "$out/liken-demo" ./test/e2e/cmd/demo
LIKEN_CONTROL_PLANE_BIN="$bin" exec "$out/liken-demo" "$@"
