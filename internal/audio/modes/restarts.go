// SPDX-License-Identifier: Apache-2.0

package modes

// The two sidecars' first processes, and why they exist.
//
// PipeWire builds its nodes from context.objects while it loads its
// configuration, and never reads a drop-in that arrives later. So a new
// declaration (a Sink's channel layout changed, the set of outputs
// changed) takes effect only in a new PipeWire. Were that restart the
// container's exit, the kubelet would hold the container in its crash
// backoff (10 s, doubling to 5 min) and every sink on the machine would be
// silent for the wait, and the container's restart count would mix
// crashes with configuration. So the container's first process is this
// binary, which runs PipeWire as its child and replaces it in place; the
// restart count counts crashes only.
//
// When is a declaration not yet loaded? The deploy/audio/operator.yaml's fact is "the drop-in
// is newer than PipeWire's socket", and the operator container, which
// cannot see PipeWire's process, reads it that way. The first process
// holds a tighter bound: the moment it forked the running PipeWire, which
// comes before PipeWire reads its configuration and before it binds its
// socket. "Modified after that fork" holds whenever "newer than the
// socket" does, and also in the two cases the socket misreads: a write
// that lands between PipeWire's configuration read and its bind (the
// socket is then newer, yet the nodes are old), and a stale socket left
// in the hostPath runtime directory by a PipeWire of an earlier pod, older
// than this pod's declaration, which would otherwise restart the new
// PipeWire before it had even bound. A restart PipeWire did not need costs
// one start and happens only on a write.
//
// WirePlumber exits when the PipeWire it served goes away. After the
// in-place restart above, that exit is expected, and its first process
// starts it again once a new PipeWire answers. A new PipeWire is told
// from the old one by its socket's identity (identity.go); an exit while
// the same PipeWire keeps serving is WirePlumber's own, and ends the
// container with WirePlumber's status, as does a PipeWire that does not
// come back within PipeWireReturnLimit.

import (
	"context"
	"path/filepath"
	"time"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/internal/supervise"
)

// declaredOutputs returns the outputs the declaration at path gives
// PipeWire; an unreadable declaration is logged and declares none, so no
// node is trusted and no claim sees one.
func declaredOutputs(path string, logf func(string, ...any)) []pipewire.Output {
	outs, err := pipewire.ReadDeclaration(path)
	if err != nil {
		logf("claim gate: %v", err)
		return nil
	}
	return outs
}

// PipeWire is the mode `audio-operator pipewire`, the first process of the
// pipewire sidecar. It runs Env.PipeWire with args as its child, with
// Env's environment and output, and returns the status to exit with:
//
//   - Whenever Env.Declaration may have changed (an inotify event in its
//     directory, or every DeclarationBackstop) and it was modified after
//     the running PipeWire was started, PipeWire gets SIGTERM once, is
//     waited for (SIGKILL after supervise.DefaultStopGrace) and is started
//     again; the mode goes on.
//   - SIGTERM and SIGINT are forwarded to PipeWire, and the mode returns
//     PipeWire's status when it exits.
//   - A PipeWire exit the mode did not cause returns PipeWire's status:
//     its exit code, or 128 plus the signal that killed it.
//   - A PipeWire that cannot be started returns 1.
//   - Beside PipeWire it runs the claim gate (gate.Run) on the socket in
//     PIPEWIRE_RUNTIME_DIR (else XDG_RUNTIME_DIR): after every PipeWire
//     start, the declared nodes are recorded and every prepared claim's
//     socket is served again.
func PipeWire(ctx context.Context, args []string, env Env) int {
	e := env.resolved()
	logf := e.logger("pipewire")
	sigs, unsubscribe := e.signals()
	defer unsubscribe()

	wake := make(chan struct{}, 1)
	done := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		watchDeclaration(e.Declaration, e.DeclarationBackstop, wake, done, logf)
	}()
	defer func() {
		close(done)
		<-watching
	}()

	// The claim gate lives beside PipeWire, in this long-lived process,
	// because what it holds must outlast the operator container (a
	// consumer keeps playing while the operator is replaced) and must be
	// made again after every PipeWire start (the claim sockets are the
	// daemon's; they end with it). It follows each new PipeWire by
	// connecting again when the old connection ends.
	if socket, err := e.socketPath(); err != nil {
		logf("%v; no claim sockets are served", err)
	} else {
		gateCtx, stopGate := context.WithCancel(ctx)
		gateDone := make(chan struct{})
		go func() {
			defer close(gateDone)
			gate.Run(gateCtx, gate.Config{
				RuntimeDir: filepath.Dir(socket), Socket: socket,
				Declared: func() []pipewire.Output { return declaredOutputs(e.Declaration, logf) },
				Logf:     logf,
			})
		}()
		defer func() { stopGate(); <-gateDone }()
	}

	s := &supervise.Supervisor{
		Command: supervise.Command{Path: e.PipeWire, Args: args, Env: e.Environ, Stdout: e.Stdout, Stderr: e.Stderr},
		Signals: sigs,
		Wake:    wake,
		Stale: func(c *supervise.Child) bool {
			after, why := declarationAfter(e.Declaration, c.Started(), time.Now())
			if after {
				logf("%s: %s", e.Declaration, why)
			}
			return after
		},
		Logf: logf,
	}
	return s.Run(ctx)
}

// WirePlumber is the mode `audio-operator wireplumber <args>`, the first
// process of the wireplumber sidecar (args are deploy/audio/operator.yaml's
// --profile=main-embedded, passed on). It runs Env.WirePlumber with args as
// its child, with Env's environment and output, and returns the status to
// exit with:
//
//   - Before each start it notes which PipeWire serves the socket in
//     PIPEWIRE_RUNTIME_DIR (else XDG_RUNTIME_DIR).
//   - When WirePlumber exits on its own, it waits (up to
//     PipeWireReturnLimit; connects 100 ms apart, doubling to 2 s) for a
//     PipeWire that accepts a connection there. Another PipeWire than the
//     one noted (or one where none was) starts WirePlumber again; the
//     same PipeWire still serving, or none within the limit, returns
//     WirePlumber's status.
//   - SIGTERM and SIGINT are forwarded to WirePlumber, and the mode
//     returns WirePlumber's status when it exits (or the status it exited
//     with, when a signal arrives during the wait).
//   - With DBUS_SYSTEM_BUS_ADDRESS set (the claim delivered a media
//     bus), it follows that bus: when its connection ends and a bus with
//     another ID answers there, WirePlumber gets SIGTERM and the mode
//     returns its status, so the container ends and the kubelet starts
//     WirePlumber on the new bus (mediabus.go).
//   - A WirePlumber that cannot be started returns 1. With neither
//     runtime variable set, there is no PipeWire to follow: the mode says
//     so and returns WirePlumber's status on any exit.
func WirePlumber(ctx context.Context, args []string, env Env) int {
	e := env.resolved()
	logf := e.logger("wireplumber")
	sigs, unsubscribe := e.signals()
	defer unsubscribe()

	s := &supervise.Supervisor{
		Command: supervise.Command{Path: e.WirePlumber, Args: args, Env: e.Environ, Stdout: e.Stdout, Stderr: e.Stderr},
		Signals: sigs,
		Logf:    logf,
	}
	if address := e.getenv(EnvSystemBus); address != "" {
		// A replaced media bus ends the run as a SIGTERM would
		// (mediabus.go says why).
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		replaced := make(chan struct{})
		go watchMediaBus(ctx, address, mediaBusPoll, mediaBusReturn, replaced, logf)
		go func() {
			select {
			case <-replaced:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	socket, err := e.socketPath()
	if err != nil {
		logf("%v; a WirePlumber exit will not wait for a new PipeWire", err)
		return s.Run(ctx)
	}
	var (
		served   pipeWireIdentity // the PipeWire the running WirePlumber serves
		servedOK bool
	)
	s.BeforeStart = func() {
		served, servedOK = currentPipeWire(ctx, socket)
	}
	s.Again = func(ctx context.Context, exited *supervise.Child) bool {
		logf("waiting up to %v for a new PipeWire at %s", e.PipeWireReturnLimit, socket)
		id, how := nextPipeWire(ctx, socket, served, servedOK, e.PipeWireReturnLimit)
		switch how {
		case newPipeWire:
			if servedOK {
				logf("PipeWire at %s was replaced (%v, was %v): starting WirePlumber again", socket, id, served)
			} else {
				logf("PipeWire answers at %s (%v): starting WirePlumber again", socket, id)
			}
			return true
		case samePipeWire:
			logf("the PipeWire WirePlumber served still answers at %s: WirePlumber's exit is its own", socket)
		default:
			if ctx.Err() == nil {
				logf("no PipeWire answered at %s within %v", socket, e.PipeWireReturnLimit)
			}
		}
		return false
	}
	return s.Run(ctx)
}
