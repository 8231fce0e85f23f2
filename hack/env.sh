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

# with_progress WHAT CMD [ARG...]: runs CMD, saying on stderr that WHAT
# starts, then every 30 s that it goes on and for how long, and when it
# ended; returns CMD's exit status. For the steps that are long on a
# machine's first run (a build from the module proxy, a download), so that
# nobody watches a silent terminal for minutes.
with_progress() {
	local what="$1" began=$SECONDS rc=0 ticker
	shift
	echo "${0##*/}: $what ..." >&2
	(
		# The sleep runs in the background and is waited for, so that the
		# TERM below ends this loop at once, not after the sleep; the trap
		# kills whatever sleep runs (jobs -p, even before $! is known). $$
		# is the script's pid: when the script is gone (Ctrl-C, kill), the
		# loop ends too instead of printing into the terminal for ever.
		trap 'kill $(jobs -p) 2>/dev/null; exit 0' TERM INT
		while kill -0 $$ 2>/dev/null; do
			sleep 30 &
			wait $!
			kill -0 $$ 2>/dev/null || break
			echo "${0##*/}:   ... still $what ($(( SECONDS - began )) s so far)" >&2
		done
	) &
	ticker=$!
	"$@" || rc=$?
	kill "$ticker" 2>/dev/null || true
	wait "$ticker" 2>/dev/null || true
	echo "${0##*/}: $what: $( [ $rc = 0 ] && echo done || echo "failed (exit $rc)" ) in $(( SECONDS - began )) s" >&2
	return $rc
}
