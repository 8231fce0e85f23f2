# Sourced by the hack scripts: Go on PATH, and the toolchain go.mod asks for.
if ! command -v go >/dev/null && [ -x /usr/local/go/bin/go ]; then
	export PATH="/usr/local/go/bin:$PATH"
fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
