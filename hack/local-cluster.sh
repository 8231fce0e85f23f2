#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs a local control plane with one simulated node carrying liken.sh's
# devices (see test/e2e/harness) until Ctrl-C. Arguments go to the program,
# e.g. `hack/local-cluster.sh -node laptop`.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh
hack/install-deps.sh

bin="$(hack/build-control-plane.sh | tail -n 1)"
# Built and exec'd rather than `go run`: go run does not pass SIGTERM on
# to its child, which would then outlive it with the whole control plane.
# -trimpath shares the build cache with the control-plane build.
out="${LIKEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/liken}/bin"
mkdir -p "$out"
go build -trimpath -o "$out/local-cluster" ./test/e2e/cmd/local-cluster
LIKEN_CONTROL_PLANE_BIN="$bin" exec "$out/local-cluster" "$@"
