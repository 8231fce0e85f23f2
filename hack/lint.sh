#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs golangci-lint with .golangci.yml over the module. The version is
# pinned here and installed through the Go module proxy (go install
# pkg@version builds it in a module graph of its own, so go.mod does not
# name it) into ~/.cache/liken/bin, once per version.
#
# Usage: hack/lint.sh [golangci-lint run arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh

GOLANGCI_LINT_VERSION=v2.15.0
bin="$HOME/.cache/liken/bin/golangci-lint-$GOLANGCI_LINT_VERSION"
if [ ! -x "$bin/golangci-lint" ]; then
	mkdir -p "$bin"
	GOFLAGS=-trimpath GOBIN="$bin" with_progress "building golangci-lint $GOLANGCI_LINT_VERSION (once)" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
fi
exec nice "$bin/golangci-lint" run --allow-parallel-runners --max-issues-per-linter 0 --max-same-issues 0 "$@" ./...
