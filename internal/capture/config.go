// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
)

// Environment variables the container reads (deploy/audio/operator.yaml
// sets the first four; PIPEWIRE_RUNTIME_DIR wins over XDG_RUNTIME_DIR, as
// it does for every PipeWire client).
const (
	EnvAddress     = "CAPTURE_ADDRESS"
	EnvTaps        = "CAPTURE_TAPS"
	EnvTLSDir      = "CAPTURE_TLS_DIR"
	EnvPipeWireDir = "PIPEWIRE_RUNTIME_DIR"
	EnvXDGDir      = "XDG_RUNTIME_DIR"
	// EnvNamespace names the namespace of the audio-api ServiceAccount;
	// without it, the namespace of this pod's own ServiceAccount.
	EnvNamespace = "POD_NAMESPACE"
)

// Defaults where a variable is unset.
const (
	DefaultAddress = ":9201"
	DefaultTaps    = 4
	DefaultTLSDir  = "/var/run/audio-capture-tls"
	// MaxTaps bounds CAPTURE_TAPS: each tap is a pw-record and an
	// encoder in a container whose memory limit is 64 MiB.
	MaxTaps = 32
)

// serviceAccountNamespace is where the kubelet writes the pod's
// namespace beside its ServiceAccount token.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Audience is the token audience a caller's token must carry: audio-api
// projects a token for it, so a token for the API server is refused.
const Audience = "audio-capture"

// CallerServiceAccount is the name of the only ServiceAccount that may
// call the container.
const CallerServiceAccount = "audio-api"

// Tool paths in the image (Debian's pipewire-bin, flac, opus-tools and
// coreutils).
const (
	DefaultPwRecord = "/usr/bin/pw-record"
	DefaultPwDump   = "/usr/bin/pw-dump"
	DefaultFlac     = "/usr/bin/flac"
	DefaultOpusenc  = "/usr/bin/opusenc"
	// DefaultStdbuf is coreutils' stdbuf(1) preload library: with
	// _STDBUF_O=0 it makes an encoder's stdout unbuffered, so each Ogg
	// page or FLAC frame leaves as soon as it is written instead of when
	// glibc's 4 KiB pipe buffer fills.
	DefaultStdbuf = "/usr/libexec/coreutils/libstdbuf.so"
)

// Config is what the container runs with.
type Config struct {
	// Address is host:port to listen on.
	Address string
	// Taps is how many taps may run at once; one more is a 503.
	Taps int
	// TLSDir is the Secret volume holding tls.crt, tls.key and ca.crt.
	TLSDir string
	// Remote reaches PipeWire.
	Remote pipewire.Remote
	// Namespace is the audio-api ServiceAccount's namespace.
	Namespace string
	// PwRecord, Flac, Opusenc and Stdbuf are the tools' paths; Stdbuf
	// empty, or a file that does not exist, runs the encoders without it.
	PwRecord, Flac, Opusenc, Stdbuf string
	// LinkDeadline bounds the wait for the recorder's link (0: 3 s).
	LinkDeadline time.Duration
	// GraphTimeout bounds the graph reading that resolves a tap's node
	// (0: 5 s); past it the tap is answered 503, PipeWire unavailable.
	GraphTimeout time.Duration
	// IdleTimeout ends a tap that received no sound for this long (0:
	// 30 s).
	IdleTimeout time.Duration
}

// ConfigFromEnv reads the container's Config from getenv. Errors name the
// variable and what is wrong with it: CAPTURE_TAPS not a whole number
// from 1 to MaxTaps, a relative CAPTURE_TLS_DIR, no PipeWire runtime
// directory, no namespace for audio-api.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Address: getenv(EnvAddress), Taps: DefaultTaps, TLSDir: getenv(EnvTLSDir),
		PwRecord: DefaultPwRecord, Flac: DefaultFlac, Opusenc: DefaultOpusenc, Stdbuf: DefaultStdbuf,
	}
	if c.Address == "" {
		c.Address = DefaultAddress
	}
	if v := getenv(EnvTaps); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > MaxTaps {
			return Config{}, fmt.Errorf("%s=%q: want the number of concurrent taps, a whole number from 1 to %d", EnvTaps, v, MaxTaps)
		}
		c.Taps = n
	}
	if c.TLSDir == "" {
		c.TLSDir = DefaultTLSDir
	}
	if !filepath.IsAbs(c.TLSDir) {
		return Config{}, fmt.Errorf("%s=%q is not an absolute path", EnvTLSDir, c.TLSDir)
	}
	for _, k := range []string{EnvPipeWireDir, EnvXDGDir} {
		if d := getenv(k); d != "" {
			if !filepath.IsAbs(d) {
				return Config{}, fmt.Errorf("%s=%q is not an absolute path", k, d)
			}
			c.Remote.RuntimeDir, c.Remote.PWDump = d, DefaultPwDump
			break
		}
	}
	if c.Remote.RuntimeDir == "" {
		return Config{}, fmt.Errorf("neither %s nor %s is set, so PipeWire's socket cannot be found", EnvPipeWireDir, EnvXDGDir)
	}
	c.Namespace = getenv(EnvNamespace)
	if c.Namespace == "" {
		b, err := os.ReadFile(serviceAccountNamespace)
		if err != nil {
			return Config{}, errors.New("no namespace for the audio-api ServiceAccount: " + EnvNamespace + " is unset and " + serviceAccountNamespace + " is unreadable (" + err.Error() + ")")
		}
		c.Namespace = strings.TrimSpace(string(b))
	}
	return c, nil
}

// CallerUser is the user name of the only caller accepted.
func (c Config) CallerUser() string {
	return "system:serviceaccount:" + c.Namespace + ":" + CallerServiceAccount
}

func (c Config) resolved() Config {
	if c.LinkDeadline <= 0 {
		c.LinkDeadline = 3 * time.Second
	}
	if c.GraphTimeout <= 0 {
		c.GraphTimeout = 5 * time.Second
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 30 * time.Second
	}
	if c.Taps <= 0 {
		c.Taps = DefaultTaps
	}
	if c.PwRecord == "" {
		c.PwRecord = DefaultPwRecord
	}
	if c.Flac == "" {
		c.Flac = DefaultFlac
	}
	if c.Opusenc == "" {
		c.Opusenc = DefaultOpusenc
	}
	return c
}
