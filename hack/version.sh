#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints the release every binary is stamped with (main.version) and the
# images are tagged with: the nearest tag, the commits since and the
# commit ("v0.1.0-3-g1a2b3c4"), "-dirty" when the tree has changes, just
# the commit when no tag exists; "dev" outside a git checkout.
cd "$(dirname "$0")/.."
git describe --tags --always --dirty 2>/dev/null || echo dev
