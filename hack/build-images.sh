#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the images deploy/*/operator.yaml run, without Docker or a registry: the Go
# binaries (static, CGO_ENABLED=0, for amd64 and cross-compiled for
# arm64), then each image from the packages installed here (PipeWire,
# WirePlumber, BlueZ, dbus; hack/install-deps.sh installs them) and from
# the arm64 builds of the same packages at the same versions (downloaded
# by APT into ~/.cache/liken/arm64-root, once per package set), as an OCI
# layout holding one image index of both platforms and a docker-save
# tarball per platform under the output directory, printing each
# reference, platform, digest, gzipped layer size and build seconds.
#
#   hack/build-images.sh [OUT] [-- build-images flags and image names]
#
# OUT defaults to _output/images; the binaries go to OUT/bin. VERSION
# (default: hack/version.sh) is the release the binaries are stamped with
# and every image's org.opencontainers.image.version label; TAG (default
# latest, what the bases name) is the images' tag. A release sets both to
# the git tag. PLATFORMS (default "linux/amd64 linux/arm64") may drop
# linux/arm64 for a quicker local build; amd64 is always built.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh
[ "${LIKEN_SKIP_DEPS:-0}" = 1 ] || hack/install-deps.sh
out="${1:-_output/images}"
shift || true
[ "${1:-}" != -- ] || shift
mkdir -p "$out/bin"
# -trimpath and no VCS stamp: the binaries, and so the digests, depend on
# the source and its release name (hack/version.sh, in main.version,
# which liken_build_info and the CLI's drift check read) alone, not on
# where the checkout is.
export CGO_ENABLED=0
version="${VERSION:-$(hack/version.sh)}"
cmds=(audio-operator audio-driver audio-capture bluetooth-operator bluetooth-input-relay bluetooth-bondfetch bluetoothd liken-inventory kubectl-liken-audio kubectl-liken-bluetooth)
# One go build per platform: the commands' shared packages compile once,
# in parallel.
gobuild() { # GOARCH OUTDIR
	GOARCH="$1" go build -trimpath -buildvcs=false -ldflags="-s -w -X main.version=$version" -o "$2/" "${cmds[@]/#/./cmd/}"
}
gobuild amd64 "$out/bin"
arm64=()
case " ${PLATFORMS:-linux/amd64 linux/arm64} " in
*" linux/arm64 "*)
	mkdir -p "$out/bin/arm64"
	gobuild arm64 "$out/bin/arm64"
	arm64=(-arm64-bin "$out/bin/arm64")
	;;
esac
go build -trimpath -o "$out/bin/.build-images" ./cmd/build-images
exec "$out/bin/.build-images" -bin "$out/bin" "${arm64[@]}" -out "$out" -tag "${TAG:-latest}" -version "$version" "$@"
