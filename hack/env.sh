# SPDX-License-Identifier: Apache-2.0
# Sourced by the hack scripts: Go on PATH, and the toolchain go.mod asks for.
# Prefer a Go that can read go.mod: /usr/local/go, then backports' Go.
for d in /usr/local/go/bin /usr/lib/go-1.2[1-9]/bin; do
	if [ -x "$d/go" ]; then
		case ":$PATH:" in *":$d:"*) ;; *) export PATH="$d:$PATH" ;; esac
		break
	fi
done
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
