// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/audio/objects"
	"github.com/liken-sh/operators/internal/audio/speakers"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/mixer"
	"github.com/liken-sh/operators/internal/pipewire"
)

// Defaults of Config.
const (
	// DefaultStartWait bounds the wait for PipeWire to answer at start.
	DefaultStartWait = 60 * time.Second
	// DefaultBackstop is the pass every minute that catches what the
	// event sources missed.
	DefaultBackstop = time.Minute
	// DefaultGraphProbe is how long the graph may go without a change
	// before the operator checks that its monitor is still current.
	DefaultGraphProbe = 10 * time.Second
	// maxGraphFailures is how many graph reads may fail in a row before
	// the operator publishes every device tainted and exits.
	maxGraphFailures = 3
)

// Config is what the operator runs with. Node and KubeClient are
// required; the rest defaults to deploy/audio/operator.yaml's pod.
type Config struct {
	Node       string
	KubeClient kubernetes.Interface
	Hardware   Hardware
	// Remote reaches the pod's PipeWire (RuntimeDir = PIPEWIRE_RUNTIME_DIR).
	Remote pipewire.Remote
	// PipeWireDir holds the declaration declare wrote.
	PipeWireDir string
	// DRA locates the kubelet and CDI directories; the driver name, CDI
	// class, node and client are filled in by Run.
	DRA       dra.Options
	StartWait time.Duration
	Backstop  time.Duration
	// GraphProbe is how long the graph monitor may print nothing before
	// it is probed (see probeMonitor); zero means DefaultGraphProbe.
	GraphProbe time.Duration
	Registerer prometheus.Registerer
	// Objects, when set, reaches the Sink and Source resources: the
	// operator creates one per endpoint, writes their status and applies
	// their spec. Nil runs the DRA driver alone.
	Objects dynamic.Interface
	// SetVolume writes a node's volume and mute; nil means the Remote's.
	SetVolume SetVolumeFunc
	// BusAddress is the media bus the operator's claim delivered
	// (DBUS_SYSTEM_BUS_ADDRESS in the claim's CDI edits, a
	// unix:path=... address): the Bluetooth speakers are read from
	// BlueZ on it. Empty: the claim delivered no bus, and no speaker is
	// published.
	BusAddress string
	// SetCodec and SetRouteVolume write a speaker's codec and route
	// volume; nil means the Remote's.
	SetCodec       SetCodecFunc
	SetRouteVolume SetRouteVolumeFunc
	// CodecWait bounds prepare's wait for a speaker to run a claim's
	// codec, and for an HDMI/DP output's node to show the codecs a claim
	// passes through; zero means DefaultCodecWait.
	CodecWait time.Duration
	// SetIEC958Codecs writes the IEC 958 codecs a node passes through;
	// nil means the Remote's.
	SetIEC958Codecs SetIEC958CodecsFunc
}

func (c *Config) complete() error {
	switch {
	case c.Node == "":
		return errors.New("the node name is required (NODE_NAME)")
	case c.KubeClient == nil:
		return errors.New("an API client is required")
	}
	if c.PipeWireDir == "" {
		c.PipeWireDir = pipewire.DeclarationDir
	}
	if c.StartWait <= 0 {
		c.StartWait = DefaultStartWait
	}
	if c.Backstop <= 0 {
		c.Backstop = DefaultBackstop
	}
	if c.GraphProbe <= 0 {
		c.GraphProbe = DefaultGraphProbe
	}
	if c.SetVolume == nil {
		c.SetVolume = c.Remote.SetVolume
	}
	if c.SetCodec == nil {
		c.SetCodec = c.Remote.SetCodec
	}
	if c.SetRouteVolume == nil {
		c.SetRouteVolume = c.Remote.SetRouteVolume
	}
	if c.SetIEC958Codecs == nil {
		c.SetIEC958Codecs = c.Remote.SetIEC958Codecs
	}
	if c.CodecWait <= 0 {
		c.CodecWait = DefaultCodecWait
	}
	c.DRA.DriverName, c.DRA.CDIClass = DriverName, CDIClass
	c.DRA.NodeName, c.DRA.KubeClient, c.DRA.Registerer = c.Node, c.KubeClient, c.Registerer
	return nil
}

// Run is the operator: it serves the kubelet and publishes one device per
// playback PCM of the claimed cards, from the cards' control interfaces
// (ELD and jack changes arrive as control events; an ELD the driver
// changed without one is caught by reading it every ELDPoll) and the live
// PipeWire graph (followed with `pw-dump -m`). It returns nil when ctx ends
// and an error otherwise: PipeWire never answered or three graph reads
// failed in a row (after publishing every device tainted), or the DRA
// plugin stopped. Bad input from one card, output or graph reading (a
// corrupt ELD, a control node that cannot be opened, a declaration that
// is missing, pw-dump output that does not parse) is logged, naming the
// card and PCM where there is one, and every other output stays published.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.complete(); err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	path := filepath.Join(cfg.PipeWireDir, pipewire.DeclarationFile)
	declared, err := pipewire.ReadDeclaration(path)
	if err != nil {
		// The declaration only says which outputs PipeWire was started
		// with; the graph says which have a sink. Without it every output
		// is still published, and each gets a line naming it below.
		logger.Error(err, "The declaration PipeWire was started with cannot be read; outputs are published with the sinks the graph holds", "declaration", path)
	}
	op := &operator{cfg: cfg, declared: map[string]bool{}, wake: make(chan struct{}, 1), eldWake: make(chan struct{}, 1),
		reported: map[string]bool{}, drifted: map[string]bool{},
		metrics: newMetrics(cfg.Registerer), volumes: map[string]volumeWrite{}, warned: map[string]bool{},
		controlsWritten: map[string]string{}, mixDirty: map[int]bool{},
		objProblems: map[string]string{}, untrusted: map[string]bool{}, trustWaitLogged: map[uint32]bool{},
		speakerNodes: map[string]string{}, codecBusy: map[string]int{}, codecWrites: map[string]codecWrite{}, iec958Writes: map[string]iec958Write{},
		routeWrites: map[string]routeWrite{}, busy: map[string]*busyState{}, absentSeen: map[string]absentSeen{}}
	for _, o := range declared {
		op.declared[o.Name] = true
	}
	// A claim prepared or unprepared changes who holds a Sink.
	cfg.DRA.OnClaimsChanged = op.poke
	op.startSpeakers(ctx)
	driver, err := dra.Start(ctx, cfg.DRA, PrepareWithCodecs(op.lookup, op, ContainersAlone(cfg.KubeClient), cfg.runtimeDir(), DefaultSocketWait))
	if err != nil {
		return err
	}
	defer driver.Stop()
	op.driver = driver
	if cfg.Objects != nil {
		stop, err := op.startObjects(ctx)
		if err != nil {
			return err
		}
		defer stop()
	}
	op.watchCards(ctx)
	op.watchELDs(ctx)
	op.watchTrusted(ctx)

	failures, answered := 0, false
	backstop := time.NewTicker(cfg.Backstop)
	defer backstop.Stop()
	// giveUp publishes every output tainted as having no sink, so nothing
	// is scheduled onto a PipeWire that cannot be read, and ends the
	// operator.
	giveUp := func(err error) error {
		op.metrics.observed(sourcePipeWire, false, time.Now())
		op.pass(ctx, nil, triggerNoGraph)
		flush, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if ferr := driver.Flush(flush); ferr != nil {
			logger.Error(ferr, "The all-tainted device set may not have reached the API server")
		}
		return fmt.Errorf("PipeWire graph unreadable (%d failed reads in a row): %w", failures, err)
	}
	for {
		mon, err := op.startMonitor(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			failures++
			logger.Error(err, "Reading the PipeWire graph failed", "inARow", failures)
			// At start PipeWire gets one StartWait; once it has answered,
			// a replaced PipeWire gets maxGraphFailures tries.
			if !answered || failures >= maxGraphFailures {
				return giveUp(err)
			}
			continue
		}
		answered = true
		restart, err := op.follow(ctx, mon, backstop.C)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		if restart {
			// The monitor was stuck and is killed; PipeWire answered, so
			// the outputs stay as the last graph had them (their Sinks
			// say it is stale) until the new monitor's first graph.
			op.metrics.monitorRestarts.WithLabelValues(restartStale).Inc()
			continue
		}
		err = mon.Err()
		if !errors.Is(err, pipewire.ErrBadDump) {
			// PipeWire went away (killed, or restarted in place for a new
			// layout): until the new one answers no output has a sink,
			// so the outputs are published tainted now rather than as
			// the last graph had them; then follow the new one.
			failures = 0
			logger.Info("pw-dump -m ended; following the graph again", "reason", err)
			op.metrics.monitorRestarts.WithLabelValues(restartEnded).Inc()
			op.pass(ctx, nil, triggerNoGraph)
			continue
		}
		// A garbled batch is a failed read even though the stream's first
		// graph was whole; nothing of it was applied, so the outputs stay
		// as the last whole graph had them. Back off rather than restart
		// pw-dump in a hot loop.
		failures++
		logger.Error(err, "The PipeWire graph could not be read", "inARow", failures)
		op.metrics.monitorRestarts.WithLabelValues(restartGarbled).Inc()
		if failures >= maxGraphFailures {
			return giveUp(err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Duration(failures) * time.Second):
		}
	}
}

// operator is the state of one Run.
type operator struct {
	cfg Config
	// busy are the endpoints whose device PipeWire found busy, by
	// device name (retryBusy); suspendNode and wakeAfter replace
	// cfg.Remote.SuspendNode and a timer's poke in tests.
	busy        map[string]*busyState
	suspendNode func(context.Context, uint32) error
	wakeAfter   func(time.Duration)
	// absent are the declared nodes the claim gate records as absent in
	// the PipeWire the latest pass read, by node.name; absentSeen what
	// was reported of them, by device name (absentNode).
	absent     map[string]gate.Absent
	absentSeen map[string]absentSeen

	driver   *dra.Driver
	declared map[string]bool // node.names PipeWire was started with
	wake     chan struct{}   // ALSA control events, claims, speakers, the record
	eldWake  chan struct{}   // an ELD that changed with no control event

	// Read and written by passes only, which run one at a time.
	reported map[string]bool // problems logged and not yet gone
	drifted  map[string]bool // outputs logged as not declared
	volumes  map[string]volumeWrite
	// controlsWritten is the spec value last written per object and
	// control key ("<name>/<key>").
	controlsWritten map[string]string
	warned          map[string]bool   // spec problems reported
	objProblems     map[string]string // object write failures logged
	// untrusted are the nodes reported as posing as declared ones
	// ("<cookie>/<serial>"); trustWaitLogged the PipeWires whose record
	// was awaited; trustErr the last failure to read the record.
	untrusted       map[string]bool
	trustWaitLogged map[uint32]bool
	trustErr        string
	claimErr        string         // the last failure keeping claim files
	ducking         map[string]int // each sink's ducking by node.name (noteDucking)

	// mixers are the cards' mixers as last read (passes only); mixMu
	// guards the marks the card watchers set when a card's controls change.
	mixers      map[string]*mixer.Mixer
	mixMu       sync.Mutex
	mixDirty    map[int]bool
	mixAllDirty bool

	// stale says why the graph the passes work from may no longer be
	// PipeWire's (nil: it is current); set and read by the passes'
	// goroutine only.
	stale *graphStale
	// graphRevision is the Revision of the monitor's graph the latest
	// graph pass read: a batch that leaves it as it is wakes no pass.
	graphRevision uint64

	metrics  *metrics
	store    *objects.Store       // nil without Config.Objects
	recorder record.EventRecorder // nil without Config.Objects
	objWake  <-chan struct{}      // the store's; nil blocks

	// speakerReader follows BlueZ on the media bus; speakerNodes are the
	// speakers' node.names as last seen, codecWrites and routeWrites the
	// resting codecs and route volumes last written (passes only).
	speakerReader *speakers.Reader
	speakerNodes  map[string]string
	codecWrites   map[string]codecWrite
	routeWrites   map[string]routeWrite
	// iec958Writes are the IEC 958 codecs last written to each node by
	// node.name (passes only).
	iec958Writes map[string]iec958Write

	mu    sync.Mutex
	known map[string]Endpoint // by device name, from the latest pass
	live  map[string]bool     // node.names in the latest graph
	// speakerEPs are the speakers of the latest pass by device name;
	// codecBusy counts the prepares switching each one's codec.
	speakerEPs map[string]SpeakerEndpoint
	codecBusy  map[string]int
}

// startMonitor starts `pw-dump -m` and waits (bounded by StartWait) for
// its first whole graph.
func (o *operator) startMonitor(ctx context.Context) (*pipewire.Monitor, error) {
	wait, cancel := context.WithTimeout(ctx, o.cfg.StartWait)
	defer cancel()
	for {
		mon, err := o.cfg.Remote.Monitor(ctx)
		if err != nil {
			return nil, err
		}
		select {
		case g, ok := <-mon.Snapshots():
			if ok {
				o.current(ctx, time.Now())
				o.graphRevision = g.Revision
				o.pass(ctx, g, triggerGraph)
				return mon, nil
			}
			// The child ended before answering (PipeWire not up yet, or
			// output that does not parse): try again until the start
			// wait runs out. A garbled graph is logged now, not only when
			// the wait has run out.
			if err := mon.Err(); errors.Is(err, pipewire.ErrBadDump) {
				klog.FromContext(ctx).Error(err, "The PipeWire graph could not be read; reading it again")
			}
			select {
			case <-wait.Done():
				return nil, fmt.Errorf("PipeWire did not answer within %s: %w", o.cfg.StartWait, mon.Err())
			case <-time.After(time.Second):
			}
		case <-wait.Done():
			mon.Stop()
			return nil, fmt.Errorf("PipeWire did not answer within %s", o.cfg.StartWait)
		}
	}
}

// follow runs passes on every graph change, control event and backstop
// tick until the monitor ends (false, nil), is found stuck and stopped
// (true, nil: start another), or the driver stops (an error). When the
// monitor has printed nothing for GraphProbe it is probed (probeMonitor).
func (o *operator) follow(ctx context.Context, mon *pipewire.Monitor, backstop <-chan time.Time) (bool, error) {
	defer mon.Stop()
	last := time.Now() // the monitor's newest batch, or its last answered probe
	probeTick := time.NewTicker(o.cfg.GraphProbe / 2)
	defer probeTick.Stop()
	var probed chan probeResult // nil while no probe runs
	for {
		select {
		case <-ctx.Done():
			return false, nil
		case <-o.driver.Done():
			if ctx.Err() != nil {
				// The driver stopped because the operator is stopping
				// (a long pass let both fire): a clean exit.
				return false, nil
			}
			return false, fmt.Errorf("DRA plugin stopped: %w", o.driver.Err())
		case g, ok := <-mon.Snapshots():
			if !ok {
				return false, nil
			}
			last = time.Now()
			if !o.current(ctx, last) && g.Revision == o.graphRevision {
				// Only objects a pass does not read changed (the
				// probe's client, or any other, coming or going).
				continue
			}
			o.graphRevision = g.Revision
			o.pass(ctx, g, triggerGraph)
		case <-o.wake:
			o.pass(ctx, mon.Latest(), triggerEvent)
		case <-o.eldWake:
			o.pass(ctx, mon.Latest(), triggerELD)
		case <-o.objWake:
			o.pass(ctx, mon.Latest(), triggerObjects)
		case <-backstop:
			o.mixerChanged(-1)
			o.pass(ctx, mon.Latest(), triggerBackstop)
		case <-probeTick.C:
			if probed != nil || time.Since(last) < o.cfg.GraphProbe {
				continue
			}
			probed = make(chan probeResult, 1)
			go func(ch chan<- probeResult, before int) { ch <- o.probeMonitor(ctx, mon, before) }(probed, mon.Batches())
		case r := <-probed:
			probed = nil
			switch {
			case r.stale == nil:
				last = r.at
				if o.current(ctx, r.at) {
					g := mon.Latest()
					o.graphRevision = g.Revision
					o.pass(ctx, g, triggerGraph)
				}
			case r.stale.Reason == ReasonMonitorStale:
				o.goneStale(ctx, r.stale, last)
				o.pass(ctx, mon.Latest(), triggerStale)
				mon.Kill()
				return true, nil
			default:
				o.goneStale(ctx, r.stale, last)
				o.pass(ctx, mon.Latest(), triggerStale)
			}
		}
	}
}

// pass reads the cards and publishes their outputs against graph g (nil:
// PipeWire is not answering, so no output has a sink); trigger is what
// woke it, counted in audio_passes_total. While the last probe found
// PipeWire not answering, g is taken as nil whatever it is: a daemon that
// gives a client no answer within probeTimeout cannot serve a new
// consumer either, so nothing is scheduled onto its outputs (no-sink is
// NoSchedule; nothing is evicted), until its next answer.
func (o *operator) pass(ctx context.Context, g *pipewire.Graph, trigger string) {
	logger := klog.FromContext(ctx)
	o.metrics.passes.WithLabelValues(trigger).Inc()
	if o.stale != nil && o.stale.Reason == ReasonPipeWireNotAnswering {
		g = nil
	}
	if g == nil {
		o.metrics.observed(sourcePipeWire, false, time.Now())
	}
	g = o.trustedGraph(ctx, g)
	p, err := Reconcile(o.cfg.Node, o.cfg.Hardware, g)
	if err != nil {
		logger.Error(err, "Reading the claimed cards")
		return
	}
	o.report(logger, p.Problems)
	for _, e := range p.Endpoints {
		if !o.declared[e.NodeName] && !o.drifted[e.Name] {
			// PipeWire was not started with this output (the PCM set
			// changed since, or the declaration is unreadable): unless the
			// graph holds its node anyway, it is published with no-sink
			// until the pod is replaced. One line each.
			o.drifted[e.Name] = true
			logger.Info("Output not in the declaration PipeWire loaded", "output", e.Name, "card", e.PCM.Card(), "pcm", e.PCM.Device(), "pcmID", e.PCM.Info.ID)
		}
	}
	known := make(map[string]Endpoint, len(p.Endpoints))
	for _, e := range p.Endpoints {
		known[e.Name] = e
	}
	o.mu.Lock()
	o.known, o.live = known, p.Live
	o.mu.Unlock()
	p.Speakers = o.speakerPass(ctx, g)
	o.publish(ctx, append(slices.Clip(p.Devices), SpeakerDevices(p.Speakers)...))
	files := o.syncClaimFiles(ctx)
	o.syncPassthrough(ctx, g, files)
	if o.store != nil {
		o.syncObjects(ctx, p, g)
	}
}

// poke wakes a pass without blocking.
func (o *operator) poke() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// report logs each problem of a pass when it first appears and once more
// when it is gone, so a fault that lasts (a corrupt ELD, a dead card) is
// not repeated on every graph change.
func (o *operator) report(logger klog.Logger, problems []error) {
	now := make(map[string]bool, len(problems))
	for _, p := range problems {
		msg := p.Error()
		if !now[msg] && !o.reported[msg] {
			logger.Error(p, "A claimed card or output has a problem")
		}
		now[msg] = true
	}
	for msg := range o.reported {
		if !now[msg] {
			logger.Info("A problem of a claimed card or output is gone", "problem", msg)
		}
	}
	o.reported = now
}

func (o *operator) publish(ctx context.Context, devices []dra.Device) {
	if err := o.driver.SetDevices(WithStatusData(devices)); err != nil {
		klog.FromContext(ctx).Error(err, "Publishing outputs")
	}
}

// lookup answers prepare from the latest pass.
func (o *operator) lookup(device string) (string, bool, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s, ok := o.speakerEPs[device]; ok {
		return s.NodeName(), s.Node != nil, true
	}
	e, ok := o.known[device]
	if !ok {
		return "", false, false
	}
	return e.NodeName, o.live[e.NodeName], true
}

// watchCards subscribes to each claimed card's control events: an ELD
// arriving with a monitor, a jack changing, an element added or removed
// wakes a pass. A card whose control cannot be subscribed is logged and
// left to the backstop.
func (o *operator) watchCards(ctx context.Context) {
	logger := klog.FromContext(ctx)
	cards, _, err := o.cfg.Hardware.Cards()
	if err != nil {
		logger.Error(err, "Listing cards to watch")
		return
	}
	for _, c := range cards {
		n := c.Card.Info.Card
		ctl, err := o.cfg.Hardware.opener().Open(n)
		if err == nil {
			err = ctl.Subscribe()
		}
		if err != nil {
			logger.Error(err, "Control events unavailable; the backstop covers this card", "card", n)
			continue
		}
		go func(ctl alsa.Control) {
			go func() { <-ctx.Done(); ctl.Close() }()
			for {
				evs, err := ctl.ReadEvents()
				if err != nil {
					if ctx.Err() == nil {
						logger.Error(err, "Control events ended", "card", n)
					}
					return
				}
				if len(evs) > 0 {
					o.mixerChanged(n)
					o.poke()
				}
			}
		}(ctl)
	}
}
