// SPDX-License-Identifier: Apache-2.0

// Package pwtest runs a real PipeWire and WirePlumber for tests, headless,
// in a temporary directory, configured the way the audio-operator pod
// configures them: the image's baked fragments (pipewire.BakedFiles), the
// declaration of outputs (pipewire.WriteDeclaration) and the generated
// WirePlumber fragments (pipewire.WriteWirePlumberFragments), with
// WirePlumber running `--profile=main-embedded`.
//
// The set-up was measured with PipeWire 1.4.2 and WirePlumber 0.5.8: no udev, no systemd, no session
// bus. XDG_RUNTIME_DIR and PIPEWIRE_RUNTIME_DIR name the directory the
// socket is created in; XDG_CONFIG_HOME holds the drop-ins (PipeWire and
// WirePlumber merge $XDG_CONFIG_HOME/<name>/<name>.conf.d with their
// /usr/share ones, where the image puts its baked files, so the baked
// files go there too under the same names). Where there is no sound
// card, a declared output's api.alsa.path is "null", ALSA's null device.
// It has no clock: a null node left to drive the graph runs it faster
// and faster, by minutes into a spin; LikeHardware makes such nodes
// follow PipeWire's Dummy-Driver at real time, as cards' nodes would.
//
// The daemons die with the test binary (PR_SET_PDEATHSIG) and are stopped
// by Stop (or the test's cleanup with New).
package pwtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/child"
)

// DefaultReadyTimeout bounds the wait for each daemon to answer. PipeWire
// creates its socket in about 140 ms here and WirePlumber publishes its
// default metadata within about a second; the bound is for a loaded host,
// where both take many times that.
const DefaultReadyTimeout = 60 * time.Second

// DefaultReadyAttempt bounds one readiness check: pw-dump answers in
// about 0.1 s here. A check cut off is tried again, so a bound a loaded
// host's pw-dump can exceed would never be met.
const DefaultReadyAttempt = 15 * time.Second

// Options configures Start.
type Options struct {
	// Outputs are declared in 60-liken-outputs.conf before PipeWire
	// starts. Use NullOutput for outputs with no card behind them.
	Outputs []pipewire.Output
	// MediaBus, when set, is the D-Bus system bus address WirePlumber
	// gets as DBUS_SYSTEM_BUS_ADDRESS, and the Bluetooth fragment is
	// written, as the declare container does when the claim delivers a
	// media bus. Empty removes DBUS_SYSTEM_BUS_ADDRESS from both
	// daemons' environment.
	MediaBus string
	// NoWirePlumber starts PipeWire alone. Nothing links streams then.
	NoWirePlumber bool
	// NoGate leaves out the claim gate (gate.Run), which otherwise runs
	// from the first StartPipeWire until Stop, beside PipeWire as the
	// pipewire container's first process runs it: it records the declared
	// nodes after every PipeWire start and serves the claim files in
	// RuntimeDir. Leave it out for a test that runs its own. A test that
	// runs PipeWire under the pipewire mode (Prepare, no StartPipeWire)
	// has that mode's gate.
	NoGate bool
	// PIDNamespace runs PipeWire in a PID namespace of its own (and a
	// mount namespace for its /proc), so that every client is in another
	// one, as in the pod: each container has its own PID namespace, and
	// a peer's pid is not visible across them (SO_PEERCRED gives 0). It
	// runs unshare(1), as root or in a user namespace of its own.
	PIDNamespace bool
	// ALSAConfig, when set, is written to alsa-lib's per-user
	// configuration ($XDG_CONFIG_HOME/alsa/asoundrc) before PipeWire
	// starts, so a declared output's api.alsa.path can name a PCM it
	// defines (IEC958FileOutput).
	ALSAConfig string
	// LeaveOut names baked files (pipewire.BakedFile.Path) not to
	// install, to show what they are for.
	LeaveOut []string
	// Captures maps the node.name of capture outputs among Outputs to
	// what each captures, over and over for as long as the daemons run:
	// interleaved PCM in CaptureFormat at the output's rate, with its
	// channel count (HardwareChannels when it declares none). Each is
	// declared on an ALSA PCM of its own that reads it (capture.go says
	// how), joined to the Dummy-Driver as LikeHardware does.
	Captures map[string][]byte
	// ReadyTimeout bounds each daemon's start; zero means
	// DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// ReadyAttempt bounds each readiness check within it (a connection,
	// a pw-dump); zero means DefaultReadyAttempt. Under software
	// emulation (the VM tier) a pw-dump alone takes seconds.
	ReadyAttempt time.Duration
}

// NullOutput returns a playback output on ALSA's null device: card and
// device as given, node name name, 48 kHz stereo (FL, FR). The null
// device needs a fixed rate: with none, PipeWire 1.4.2 crashed when a
// stream started (see pipewire.Output.Rate).
func NullOutput(card, device int, name string) pipewire.Output {
	return pipewire.Output{
		Card: card, Device: device, Name: name, Path: "null",
		Rate: 48000, Channels: 2, Positions: []string{"FL", "FR"},
		Description: fmt.Sprintf("null output card %d PCM %d", card, device),
		Output:      fmt.Sprintf("test-card%d-pcm%d", card, device),
	}
}

// Daemons is a running PipeWire and (unless NoWirePlumber) WirePlumber.
type Daemons struct {
	opts Options
	// Root is the temporary directory holding everything below.
	Root string
	// RuntimeDir holds PipeWire's sockets (pipewire-0).
	RuntimeDir string
	// ConfigHome is XDG_CONFIG_HOME.
	ConfigHome string
	// PipeWireConfD and WirePlumberConfD are the drop-in directories,
	// the pod's /etc/pipewire/pipewire.conf.d and
	// /etc/wireplumber/wireplumber.conf.d.
	PipeWireConfD, WirePlumberConfD string

	mu       sync.Mutex
	pw       *Process
	wp       *Process
	n        int // daemon starts, for log names
	stopGate func()
	feeds    []*feed // Options.Captures, closed by Stop
}

// Start writes the configuration (Prepare) and starts PipeWire, waits
// until its socket accepts, then starts WirePlumber and waits until it
// has published its "default" metadata. On error nothing is left running
// and the error carries the end of the daemons' logs.
func Start(ctx context.Context, opts Options) (*Daemons, error) {
	d, err := Prepare(opts)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Daemons, error) {
		logs := d.Logs()
		d.Stop()
		return nil, fmt.Errorf("pwtest: %w\n%s", err, logs)
	}
	if err := d.StartPipeWire(ctx); err != nil {
		return fail(err)
	}
	if !opts.NoWirePlumber {
		if err := d.StartWirePlumber(ctx); err != nil {
			return fail(err)
		}
	}
	return d, nil
}

// Prepare creates the temporary directories and writes the configuration
// Start would, and starts no daemon: for a test that runs the daemons its
// own way (a supervisor under test) with DaemonEnv. The feeders of
// Options.Captures run from here until Stop, which also removes the
// directory. Options that cannot be declared are an error.
func Prepare(opts Options) (*Daemons, error) {
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if opts.ReadyAttempt <= 0 {
		opts.ReadyAttempt = DefaultReadyAttempt
	}
	// A short name: the socket path must fit in a sockaddr_un.
	root, err := os.MkdirTemp("", "pwtest")
	if err != nil {
		return nil, fmt.Errorf("pwtest: %w", err)
	}
	d := &Daemons{
		opts:       opts,
		Root:       root,
		RuntimeDir: filepath.Join(root, "run"),
		ConfigHome: filepath.Join(root, "config"),
	}
	d.PipeWireConfD = filepath.Join(d.ConfigHome, "pipewire", "pipewire.conf.d")
	d.WirePlumberConfD = filepath.Join(d.ConfigHome, "wireplumber", "wireplumber.conf.d")
	fail := func(err error) (*Daemons, error) {
		os.RemoveAll(root)
		return nil, fmt.Errorf("pwtest: %w", err)
	}
	for _, dir := range []string{d.RuntimeDir, filepath.Join(root, "state"), filepath.Join(root, "data")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fail(err)
		}
	}
	// The image's baked files live under /usr/share; here they go in the
	// user configuration directory, which both daemons merge the same
	// way, file names deciding the order. WirePlumber looks for scripts
	// in the data directories alone (XDG_DATA_HOME here).
	for _, f := range pipewire.BakedFiles() {
		if slices.Contains(opts.LeaveOut, f.Path) {
			continue
		}
		path := filepath.Join(d.ConfigHome, filepath.FromSlash(f.Path))
		if strings.HasPrefix(f.Path, "wireplumber/scripts/") {
			path = filepath.Join(root, "data", filepath.FromSlash(f.Path))
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fail(err)
		}
		if err := os.WriteFile(path, f.Content, 0o644); err != nil {
			return fail(err)
		}
	}
	if _, err := pipewire.WriteWirePlumberFragments(d.WirePlumberConfD, opts.MediaBus != ""); err != nil {
		return fail(err)
	}
	outputs, feeds, err := feedCaptures(root, d.ConfigHome, opts.Outputs, opts.Captures)
	if err != nil {
		return fail(err)
	}
	if err := appendALSAConfig(d.ConfigHome, opts.ALSAConfig); err != nil {
		closeFeeds(feeds)
		return fail(err)
	}
	if _, err := pipewire.WriteDeclaration(d.PipeWireConfD, outputs); err != nil {
		closeFeeds(feeds)
		return fail(err)
	}
	d.feeds = feeds
	return d, nil
}

// New is Start for a test: it fails the test on error and stops the
// daemons in the test's cleanup, logging the end of their logs if the
// test failed.
func New(t testing.TB, opts Options) *Daemons {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("PipeWire and WirePlumber logs:\n%s", d.Logs())
		}
		if err := d.Stop(); err != nil {
			t.Errorf("pwtest: stop: %v", err)
		}
	})
	return d
}

// Remote returns the pipewire.Remote that reaches this PipeWire.
func (d *Daemons) Remote() pipewire.Remote { return pipewire.Remote{RuntimeDir: d.RuntimeDir} }

// SocketPath is PipeWire's client socket.
func (d *Daemons) SocketPath() string { return filepath.Join(d.RuntimeDir, "pipewire-0") }

// DeclarationPath is the declaration PipeWire reads at start.
func (d *Daemons) DeclarationPath() string {
	return filepath.Join(d.PipeWireConfD, pipewire.DeclarationFile)
}

// Env returns the environment a client of this PipeWire runs with: the
// process environment with the runtime directory set, no session bus,
// and the configuration home, so client tools find their client.conf.
func (d *Daemons) Env() []string {
	env := d.Remote().Env()
	out := env[:0:0]
	for _, kv := range env {
		if strings.HasPrefix(kv, "DBUS_SESSION_BUS_ADDRESS=") || strings.HasPrefix(kv, "PIPEWIRE_NODE=") ||
			strings.HasPrefix(kv, "PIPEWIRE_REMOTE=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "DBUS_SESSION_BUS_ADDRESS=disabled:")
}

// DaemonEnv is the environment both daemons run with: Env plus
// XDG_CONFIG_HOME (the drop-ins), XDG_STATE_HOME and XDG_DATA_HOME in the
// temporary directory, and DBUS_SYSTEM_BUS_ADDRESS only when MediaBus
// is set.
func (d *Daemons) DaemonEnv() []string {
	env := d.Env()
	out := env[:0:0]
	for _, kv := range env {
		if strings.HasPrefix(kv, "XDG_CONFIG_HOME=") || strings.HasPrefix(kv, "XDG_STATE_HOME=") ||
			strings.HasPrefix(kv, "XDG_DATA_HOME=") || strings.HasPrefix(kv, "DBUS_SYSTEM_BUS_ADDRESS=") ||
			strings.HasPrefix(kv, "PIPEWIRE_CONFIG_DIR=") || strings.HasPrefix(kv, "WIREPLUMBER_CONFIG_DIR=") {
			continue
		}
		out = append(out, kv)
	}
	out = append(out,
		"XDG_CONFIG_HOME="+d.ConfigHome,
		"XDG_STATE_HOME="+filepath.Join(d.Root, "state"),
		"XDG_DATA_HOME="+filepath.Join(d.Root, "data"),
	)
	if d.opts.MediaBus != "" {
		out = append(out, "DBUS_SYSTEM_BUS_ADDRESS="+d.opts.MediaBus)
	}
	return out
}

// Command returns name with args, run with Env.
func (d *Daemons) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = d.Env()
	cmd.WaitDelay = time.Second
	return cmd
}

// Declare rewrites the declaration; PipeWire reads it at its next start
// (RestartPipeWire).
func (d *Daemons) Declare(outputs []pipewire.Output) error {
	_, err := pipewire.WriteDeclaration(d.PipeWireConfD, outputs)
	return err
}

// PipeWire returns the running PipeWire process, or nil.
func (d *Daemons) PipeWire() *Process {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pw
}

// WirePlumber returns the running WirePlumber process, or nil.
func (d *Daemons) WirePlumber() *Process {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.wp
}

// StartPipeWire starts PipeWire and waits until its socket accepts a
// connection. It is an error if one is already running.
func (d *Daemons) StartPipeWire(ctx context.Context) error {
	d.mu.Lock()
	if d.pw != nil && !d.pw.Exited() {
		d.mu.Unlock()
		return errors.New("PipeWire is already running")
	}
	d.n++
	name, args := "pipewire", []string(nil)
	if d.opts.PIDNamespace {
		// --kill-child: PipeWire dies with unshare, which Stop signals.
		name, args = "unshare", []string{"--pid", "--kill-child", "--mount", "--mount-proc"}
		if os.Geteuid() != 0 {
			args = append([]string{"--user", "--map-root-user"}, args...)
		}
		args = append(args, "pipewire")
	}
	// Taken before the start: on a loaded machine the gate may record
	// this PipeWire before this goroutine runs again, and a time taken
	// after the start would then be later than the record.
	started := time.Now()
	p, err := child.Start(filepath.Join(d.Root, fmt.Sprintf("pipewire.%d.log", d.n)), d.DaemonEnv(), name, args...)
	if err != nil {
		d.mu.Unlock()
		return fmt.Errorf("start pipewire: %w", err)
	}
	d.pw = p
	if !d.opts.NoGate && d.stopGate == nil {
		d.startGate()
	}
	gated := d.stopGate != nil
	d.mu.Unlock()
	// Ready is a socket that accepts, not a pw-dump that answers: a test
	// may start a PipeWire on purpose that does not answer this client.
	// PipeWire serves a connection only after it has loaded its
	// configuration and created the declared nodes (one main loop). With
	// the gate, ready also means it has recorded this PipeWire's
	// declared nodes.
	return d.waitReady(ctx, p, "PipeWire", func(ctx context.Context) error {
		var dialer net.Dialer
		c, err := dialer.DialContext(ctx, "unix", d.SocketPath())
		if err != nil {
			return err
		}
		c.Close()
		if !gated {
			return nil
		}
		st, err := os.Stat(filepath.Join(d.RuntimeDir, gate.TrustedFile))
		if err != nil || st.ModTime().Before(started) {
			return errors.New("the claim gate has not recorded this PipeWire's declared nodes")
		}
		return nil
	})
}

// startGate runs gate.Run until Stop, logging to gate.log.
func (d *Daemons) startGate() {
	log, err := os.OpenFile(filepath.Join(d.Root, "gate.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		log = nil
	}
	var logMu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		gate.Run(ctx, gate.Config{
			RuntimeDir: d.RuntimeDir,
			Declared: func() []pipewire.Output {
				outs, _ := pipewire.ReadDeclaration(d.DeclarationPath())
				return outs
			},
			Logf: func(format string, args ...any) {
				if log == nil {
					return
				}
				logMu.Lock()
				defer logMu.Unlock()
				fmt.Fprintf(log, format+"\n", args...)
			},
		})
	}()
	d.stopGate = func() {
		cancel()
		<-done
		if log != nil {
			log.Close()
		}
	}
}

// StartWirePlumber starts `wireplumber --profile=main-embedded` and waits
// until the "default" metadata object (WirePlumber's policy) exists.
func (d *Daemons) StartWirePlumber(ctx context.Context) error {
	p, err := d.LaunchWirePlumber()
	if err != nil {
		return err
	}
	return d.waitReady(ctx, p, "WirePlumber", func(ctx context.Context) error {
		md, err := d.Metadata(ctx, "default")
		if err != nil {
			return err
		}
		if md == nil {
			return errors.New("no default metadata yet")
		}
		return nil
	})
}

// LaunchWirePlumber starts WirePlumber and returns at once, for a test
// that decides readiness by what WirePlumber does (endpoints registered
// with BlueZ, say) rather than by a pw-dump. It is an error if one is
// already running.
func (d *Daemons) LaunchWirePlumber() (*Process, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.wp != nil && !d.wp.Exited() {
		return nil, errors.New("WirePlumber is already running")
	}
	d.n++
	p, err := child.Start(filepath.Join(d.Root, fmt.Sprintf("wireplumber.%d.log", d.n)), d.DaemonEnv(),
		"wireplumber", "--profile="+pipewire.Profile)
	if err != nil {
		return nil, fmt.Errorf("start wireplumber: %w", err)
	}
	d.wp = p
	return p, nil
}

// waitReady polls ready every 50 ms until it succeeds, the process exits,
// or the ready timeout passes.
func (d *Daemons) waitReady(ctx context.Context, p *Process, name string, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.ReadyTimeout)
	defer cancel()
	var last error
	for {
		pctx, pcancel := context.WithTimeout(ctx, d.opts.ReadyAttempt)
		last = ready(pctx)
		pcancel()
		if last == nil {
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("%s exited while starting: %v", name, p.Err())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %v: %v", name, d.opts.ReadyTimeout, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// StopPipeWire stops PipeWire (SIGTERM, then SIGKILL after 5 s).
// WirePlumber exits by itself when its PipeWire goes away.
func (d *Daemons) StopPipeWire() {
	if p := d.PipeWire(); p != nil {
		p.Stop()
	}
}

// StopWirePlumber stops WirePlumber.
func (d *Daemons) StopWirePlumber() {
	if p := d.WirePlumber(); p != nil {
		p.Stop()
	}
}

// Restart stops both daemons and starts them again, so that PipeWire
// reads the declaration as it is now.
func (d *Daemons) Restart(ctx context.Context) error {
	d.StopWirePlumber()
	d.StopPipeWire()
	if err := d.StartPipeWire(ctx); err != nil {
		return err
	}
	if d.opts.NoWirePlumber {
		return nil
	}
	return d.StartWirePlumber(ctx)
}

// Logs returns the end of every daemon log written so far.
func (d *Daemons) Logs() string {
	files, _ := filepath.Glob(filepath.Join(d.Root, "*.log"))
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(f), child.Tail(f, 40))
	}
	return b.String()
}

// Stop stops WirePlumber and PipeWire and removes the temporary
// directory. It returns an error only if the directory could not be
// removed; stopping twice is harmless.
func (d *Daemons) Stop() error {
	d.mu.Lock()
	stopGate := d.stopGate
	d.stopGate = nil
	d.mu.Unlock()
	if stopGate != nil {
		stopGate()
	}
	d.StopWirePlumber()
	d.StopPipeWire()
	// After PipeWire: a source reading a pipe with no writer would read
	// its end over and over.
	d.mu.Lock()
	feeds := d.feeds
	d.feeds = nil
	d.mu.Unlock()
	closeFeeds(feeds)
	if d.Root == "" {
		return nil
	}
	return os.RemoveAll(d.Root)
}

// Process is one daemon started by Daemons.
type Process = child.Process

// appendALSAConfig adds conf to alsa-lib's per-user configuration under
// configHome, after the PCMs of Options.Captures when there are any.
func appendALSAConfig(configHome, conf string) error {
	if conf == "" {
		return nil
	}
	path := filepath.Join(configHome, filepath.FromSlash(alsaConfigPath))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(conf + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
