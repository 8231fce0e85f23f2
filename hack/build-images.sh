#!/usr/bin/env bash
# Builds the images deploy/*/operator.yaml run, without Docker or a registry: the Go
# binaries (static, CGO_ENABLED=0), then each image from the packages
# installed here (PipeWire, WirePlumber, BlueZ, dbus; hack/install-deps.sh
# installs them), as an OCI layout and a docker-save tarball under the
# output directory, printing each reference, digest, gzipped layer size
# and build seconds.
#
#   hack/build-images.sh [OUT] [-- build-images flags and image names]
#
# OUT defaults to _output/images; the binaries go to OUT/bin. VERSION
# (default: hack/version.sh) is the release the binaries are stamped with
# and every image's org.opencontainers.image.version label; TAG (default
# latest, what the bases name) is the images' tag. A release sets both to
# the git tag.
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
for cmd in audio-operator audio-driver audio-capture bluetooth-operator bluetooth-bondfetch bluetoothd liken-inventory kubectl-liken-audio kubectl-liken-bluetooth; do
	go build -trimpath -buildvcs=false -ldflags="-s -w -X main.version=$version" -o "$out/bin/$cmd" "./cmd/$cmd"
done
go build -trimpath -o "$out/bin/.build-images" ./cmd/build-images
exec "$out/bin/.build-images" -bin "$out/bin" -out "$out" -tag "${TAG:-latest}" -version "$version" "$@"
