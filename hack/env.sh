# SPDX-License-Identifier: Apache-2.0
# Sourced by the hack scripts: Go on PATH, the toolchain go.mod asks for,
# and the one fuzzing runs on.
# Prefer a Go that can read go.mod: /usr/local/go, then backports' Go.
for d in /usr/local/go/bin /usr/lib/go-1.2[1-9]/bin; do
	if [ -x "$d/go" ]; then
		case ":$PATH:" in *":$d:"*) ;; *) export PATH="$d:$PATH" ;; esac
		break
	fi
done
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
# Fuzzing runs on Go 1.27.3, which the module proxy serves like any module.
# Go 1.26's fuzzing coordinator can fail a run that found nothing with a
# bare "context deadline exceeded" when -fuzztime expires on a loaded
# machine: its stop check compares the deadline's error with the child
# context's before that child is cancelled (src/internal/fuzz/fuzz.go,
# go.dev/issue/75804, fixed in 1.27). Everything else builds on go.mod's Go.
export LIKEN_FUZZ_TOOLCHAIN="${LIKEN_FUZZ_TOOLCHAIN:-go1.27.3}"
