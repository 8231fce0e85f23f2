#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The VM test tier: boots a real Debian kernel (bookworm-backports) under
# qemu, with no KVM needed, and runs the kernel-facing tests inside it:
# ALSA ioctls on real cards, uevents, uhid HID devices, HCI and bluetoothd
# on virtual Bluetooth controllers (test/vm, and the vmtier tests of the
# packages it lists). Installs what is missing first; the kernel package is
# cached under ${LIKEN_CACHE:-~/.cache/liken}/vm. Arguments go to the
# harness, e.g. -run alsa,hid or -keep.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh
[ "${LIKEN_SKIP_DEPS:-0}" = 1 ] || hack/install-deps.sh
cache="${LIKEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/liken}/vm"
exec go run -trimpath ./test/vm/cmd/vm-test -cache "$cache" "$@"
