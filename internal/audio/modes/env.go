// SPDX-License-Identifier: Apache-2.0

package modes

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
)

// Paths in the image: Debian's pipewire, pipewire-bin and wireplumber
// packages install the daemons and pw-dump under /usr/bin; the declaration
// is the drop-in the declare container writes (deploy/audio/operator.yaml, volume
// pipewire-config).
const (
	DefaultPipeWire    = "/usr/bin/pipewire"
	DefaultWirePlumber = "/usr/bin/wireplumber"
	DefaultPwDump      = "/usr/bin/pw-dump"
	DefaultDeclaration = "/etc/pipewire/pipewire.conf.d/60-liken-outputs.conf"
)

// SocketName is the name of the socket PipeWire serves in its runtime
// directory: its default core name. A consumer reaches its claim's own
// socket of that name, in a directory named after the claim
// (PIPEWIRE_REMOTE=/var/run/audio.liken.sh/<claim UID>/pipewire-0).
const SocketName = pipewire.SocketName

// Environment variables the modes read. PipeWire looks for its runtime
// directory in PIPEWIRE_RUNTIME_DIR first and XDG_RUNTIME_DIR second
// (deploy/audio/operator.yaml); DBUS_SYSTEM_BUS_ADDRESS is the media bus the Bluetooth
// operator's claim delivers.
const (
	EnvPipeWireRuntimeDir = "PIPEWIRE_RUNTIME_DIR"
	EnvXDGRuntimeDir      = "XDG_RUNTIME_DIR"
	EnvSystemBus          = "DBUS_SYSTEM_BUS_ADDRESS"
)

// Bounds. The probes' deadline stays under the 10 s timeoutSeconds
// deploy/audio/operator.yaml gives every probe, with room for the process to start and report; the
// wait for a returning PipeWire outlasts the kubelet's longest crash
// backoff (5 min), so a PipeWire container that crashed and came back is
// still followed.
const (
	DefaultProbeDeadline       = 8 * time.Second
	DefaultPipeWireReturnLimit = 6 * time.Minute
	DefaultDeclarationBackstop = 30 * time.Second
)

// Env is what a mode takes from the process that runs it. The binary
// passes ProcessEnv(); tests point the paths elsewhere and shorten the
// bounds. Zero fields mean the defaults above.
type Env struct {
	// Environ is the environment, KEY=VALUE entries as os.Environ gives
	// them; nil means this process's. Every child (PipeWire, WirePlumber,
	// pw-dump) gets it whole. Where a key repeats, the last entry counts,
	// as it does for the child.
	Environ []string
	// Stdout and Stderr receive the mode's lines and its children's
	// output; nil discards.
	Stdout, Stderr io.Writer
	// Signals delivers the signals a supervising mode forwards to its
	// child; nil subscribes the process to SIGTERM and SIGINT for the
	// mode's run.
	Signals <-chan os.Signal

	// PipeWire, WirePlumber and PwDump are the programs' absolute paths.
	PipeWire, WirePlumber, PwDump string
	// Declaration is the node declaration whose change restarts PipeWire.
	Declaration string

	// ProbeDeadline bounds each probe from start to answer.
	ProbeDeadline time.Duration
	// PipeWireReturnLimit bounds the wait for a new PipeWire after
	// WirePlumber exits.
	PipeWireReturnLimit time.Duration
	// DeclarationBackstop is the period of the declaration check that
	// runs even when no file event arrives.
	DeclarationBackstop time.Duration
}

// ProcessEnv is the Env of this process: its environment, standard output
// and error, and the image's paths.
func ProcessEnv() Env {
	return Env{Environ: os.Environ(), Stdout: os.Stdout, Stderr: os.Stderr}
}

// resolved returns e with every zero field set to its default.
func (e Env) resolved() Env {
	if e.Environ == nil {
		e.Environ = os.Environ()
	}
	if e.Stdout == nil {
		e.Stdout = io.Discard
	}
	if e.Stderr == nil {
		e.Stderr = io.Discard
	}
	orDefault := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	orDefault(&e.PipeWire, DefaultPipeWire)
	orDefault(&e.WirePlumber, DefaultWirePlumber)
	orDefault(&e.PwDump, DefaultPwDump)
	orDefault(&e.Declaration, DefaultDeclaration)
	orDuration := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	orDuration(&e.ProbeDeadline, DefaultProbeDeadline)
	orDuration(&e.PipeWireReturnLimit, DefaultPipeWireReturnLimit)
	orDuration(&e.DeclarationBackstop, DefaultDeclarationBackstop)
	return e
}

// getenv returns the value of key in Environ, the last entry winning.
func (e Env) getenv(key string) string {
	for i := len(e.Environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(e.Environ[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// socketPath is where PipeWire serves SocketName, found as PipeWire finds
// its runtime directory; it fails naming both variables when neither is
// set, or naming the one whose value is not an absolute path.
func (e Env) socketPath() (string, error) {
	for _, key := range []string{EnvPipeWireRuntimeDir, EnvXDGRuntimeDir} {
		dir := e.getenv(key)
		if dir == "" {
			continue
		}
		if !filepath.IsAbs(dir) {
			return "", fmt.Errorf("%s=%q is not an absolute path", key, dir)
		}
		return filepath.Join(dir, SocketName), nil
	}
	return "", fmt.Errorf("neither %s nor %s is set, so PipeWire's socket cannot be found", EnvPipeWireRuntimeDir, EnvXDGRuntimeDir)
}

// signals returns the channel of signals to forward and a function that
// ends the subscription, subscribing the process when e.Signals is nil.
func (e Env) signals() (<-chan os.Signal, func()) {
	if e.Signals != nil {
		return e.Signals, func() {}
	}
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	return ch, func() { signal.Stop(ch) }
}

// logger returns a printf that writes one line to Stderr prefixed with
// the mode's name.
func (e Env) logger(mode string) func(format string, args ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(e.Stderr, "audio-operator %s: %s\n", mode, fmt.Sprintf(format, args...))
	}
}
