// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/dra"
)

// Radio is what the controller asks of bluetoothd; *bluez.Client has
// these methods.
type Radio interface {
	SetProperty(ctx context.Context, path dbus.ObjectPath, iface, name string, value any) error
	StartDiscovery(ctx context.Context, adapter dbus.ObjectPath) error
	StopDiscovery(ctx context.Context, adapter dbus.ObjectPath) error
	Pair(ctx context.Context, device dbus.ObjectPath) error
	CancelPairing(ctx context.Context, device dbus.ObjectPath) error
	Disconnect(ctx context.Context, device dbus.ObjectPath) error
	Connect(ctx context.Context, device dbus.ObjectPath) error
	ConnectProfile(ctx context.Context, device dbus.ObjectPath, uuid string) error
	RemoveDevice(ctx context.Context, adapter, device dbus.ObjectPath) error
	RegisterAgent(ctx context.Context, h bluez.AgentHandler) error
	UnregisterAgent(ctx context.Context) error
}

// DefaultKernelReleasePath is where Linux gives the running kernel's
// release, "6.12.48+deb13-amd64" (proc(5)).
const DefaultKernelReleasePath = "/proc/sys/kernel/osrelease"

// Config is what a Controller runs with; every field but SysRoot,
// KernelReleasePath, BondsRoot, Registerer and Now is required.
type Config struct {
	// Node is this node's name.
	Node string
	// Namespace holds the bond Secrets.
	Namespace string
	// Adapter is the address of the one adapter this operator serves.
	Adapter bdaddr.Address
	// Client reaches the three kinds; Kube records Events.
	Client dynamic.Interface
	Kube   kubernetes.Interface
	// Radio is bluetoothd.
	Radio Radio
	// SysRoot is sysfs, for batteries; empty means /sys.
	SysRoot string
	// KernelReleasePath is the file holding the running kernel's release
	// (proc(5): /proc/sys/kernel/osrelease), shown in each Adapter's
	// status; empty means DefaultKernelReleasePath. An unreadable file
	// leaves the release out of the status.
	KernelReleasePath string
	// BondsRoot is BlueZ's storage tree (/var/lib/bluetooth), for the
	// speakers' cached stream endpoints; empty leaves them unchecked.
	BondsRoot string
	// Registerer takes the controller's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Input is what a pass knows besides BlueZ's objects.
type Input struct {
	// Objects is one GetManagedObjects answer, already limited to
	// Config.Adapter and its devices.
	Objects bluez.Objects
	// InputNodes gives a peer's evdev nodes (BlueZ spelling of the
	// address), for Ready.
	InputNodes func(address string) []string
	// HIDDevPath gives the sysfs path (below SysRoot, leading slash) of
	// the peer's HID device, for its battery; "" when it has none.
	HIDDevPath func(address string) string
	// Holders maps the DRA device names a prepared claim holds to that
	// claim (dra.Driver.Holders), and those of the speakers an audio
	// claim holds (AudioHolders).
	Holders map[string]dra.ClaimRef
	// PageScan is the kernel's HCI_PSCAN flag of the adapter
	// (hci.DevInfo.PageScan), nil when it could not be read; PageScanErr
	// says why.
	PageScan    *bool
	PageScanErr error
	// NodeAdapters are the addresses of every adapter bluetoothd on this
	// node reports, served or not; nil when unknown. An Adapter being
	// deleted whose radio was last on this node and is not among them
	// is released.
	NodeAdapters []string
}

// Result is what a pass asks of the rest of the operator.
type Result struct {
	// KeepOut names the DRA devices (peer keys) being unpaired, which the
	// slice must no longer offer; call Retired once a slice without them
	// is written.
	KeepOut []string
	// SkipBonds are the peers whose bond Secret must not be rewritten
	// (they are being unpaired).
	SkipBonds []bdaddr.Address
	// Owners are the Peripherals that own each peer's bond Secret.
	Owners map[bdaddr.Address]metav1.OwnerReference
	// After, when not zero, asks for another pass that much later (a
	// window to close, a TTL, an unpair step).
	After time.Duration
}

// Controller is the pairing API's side of the operator. Pass is called
// from one goroutine; the agent's calls arrive on others.
type Controller struct {
	cfg      Config
	store    *store
	recorder events.EventRecorder
	metrics  *metrics
	wake     chan struct{}
	kernel   string

	mu         sync.Mutex
	attempts   map[string]*attempt    // by request key, while Device1.Pair runs or its result waits
	retiring   map[string]bool        // peer keys kept out of the slice
	retired    map[string]bool        // ... and a slice without them was written
	opened     bool                   // this process opened the window
	windowErr  string                 // why the radio refused the window last pass
	timeoutFor time.Time              // the deadline BlueZ's timeouts were written for
	logged     map[string]bool        // one-time log lines
	a2dp       map[string]*a2dpRepair // by peripheral name, while a connected speaker lacks A2DP
}

// New makes a Controller; Start runs its informers.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Node == "" || cfg.Namespace == "":
		return nil, errors.New("pairing: the node and the namespace are required")
	case cfg.Adapter.IsZero():
		return nil, errors.New("pairing: the adapter's address is required")
	case cfg.Client == nil || cfg.Kube == nil || cfg.Radio == nil:
		return nil, errors.New("pairing: the API clients and the radio are required")
	}
	if cfg.SysRoot == "" {
		cfg.SysRoot = "/sys"
	}
	if cfg.KernelReleasePath == "" {
		cfg.KernelReleasePath = DefaultKernelReleasePath
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Controller{
		cfg: cfg, wake: make(chan struct{}, 1), attempts: map[string]*attempt{},
		retiring: map[string]bool{}, retired: map[string]bool{}, logged: map[string]bool{}, a2dp: map[string]*a2dpRepair{},
	}
	c.store = newStore(cfg.Client, cfg.Adapter.Key(), c.poke, c.requestSpecChanged)
	c.metrics = newMetrics(cfg.Registerer)
	if b, err := os.ReadFile(cfg.KernelReleasePath); err == nil {
		c.kernel = strings.TrimSpace(string(b))
	}
	return c, nil
}

// Start runs the informers and the Event recorder until ctx ends.
func (c *Controller) Start(ctx context.Context) {
	scheme := runtime.NewScheme()
	_ = btv1.AddToScheme(scheme)
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: c.cfg.Kube.EventsV1()})
	b.StartRecordingToSink(ctx.Done())
	c.recorder = b.NewRecorder(scheme, "bluetooth.liken.sh/operator")
	c.store.run(ctx)
}

// Unpairing reports whether one of the adapter's Peripherals is being
// unpaired: marked for deletion, its finalizer waiting for the claims
// that hold it. It reads the informer's cache, no API request.
func (c *Controller) Unpairing() bool { return c.store.unpairing() }

// Wake receives when a pass should run: an object changed, or the agent
// has news for a request's status.
func (c *Controller) Wake() <-chan struct{} { return c.wake }

func (c *Controller) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Retired records that a slice without the devices of an earlier
// Result.KeepOut reached the API server.
func (c *Controller) Retired(names []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		if c.retiring[n] {
			c.retired[n] = true
		}
	}
	c.poke()
}

// Pass brings the objects in step with in and acts on them. It writes
// nothing before the informers have listed (an empty store would look
// like no objects at all), and then returns a zero Result. Errors of
// single objects are joined; the rest of the pass still runs.
func (c *Controller) Pass(ctx context.Context, in Input) (Result, error) {
	start := time.Now()
	defer func() { c.metrics.reconcile.Observe(time.Since(start).Seconds()) }()
	if !c.store.synced() {
		return Result{After: time.Second}, nil
	}
	p := &pass{c: c, ctx: ctx, in: in, now: c.cfg.Now().UTC().Truncate(time.Second), log: klog.FromContext(ctx).WithName("pairing")}
	p.run()
	if len(p.errs) > 0 {
		c.metrics.errors.Add(float64(len(p.errs)))
	}
	return p.res, errors.Join(p.errs...)
}

// pass is the state of one Pass.
type pass struct {
	c       *Controller
	ctx     context.Context
	in      Input
	now     time.Time
	log     klog.Logger
	res     Result
	errs    []error
	adapter *btv1.Adapter // ours, once ensured
	radio   *bluez.Adapter
}

func (p *pass) fail(format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf(format, args...))
}

// conflictRetry is how soon a pass follows a status write refused as a
// conflict: the informer is about to deliver the newer object, which
// the next pass starts from.
const conflictRetry = 250 * time.Millisecond

// statusFailed records a failed status write of what (kind and name).
// A conflict (HTTP 409: the object changed since the informer saw it,
// usually by a write of a person or of the plugin racing this pass) is
// not a fault: the write is redone soon from the newer object, and only
// logged at verbosity 2. Any other error fails the pass.
func (p *pass) statusFailed(what string, err error) {
	if apierrors.IsConflict(err) {
		p.log.V(2).Info("Status write raced a newer object; redoing it", "object", what)
		p.after(conflictRetry)
		return
	}
	p.fail("%s status: %v", what, err)
}

// after asks for a pass within d.
func (p *pass) after(d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if p.res.After == 0 || d < p.res.After {
		p.res.After = d
	}
}

func (p *pass) run() {
	for i := range p.in.Objects.Adapters {
		a := p.in.Objects.Adapters[i]
		if addr, err := bdaddr.Parse(a.Address); err == nil && addr == p.c.cfg.Adapter {
			p.radio = &a
		}
	}
	p.syncAdapter()
	p.syncPeripherals()
	p.syncRequests()
}

// event records an Event about obj.
func (c *Controller) event(obj runtime.Object, warning bool, reason, action, format string, args ...any) {
	if c.recorder == nil {
		return
	}
	typ := "Normal"
	if warning {
		typ = "Warning"
	}
	c.recorder.Eventf(obj, nil, typ, reason, action, format, args...)
}

// logOnce logs msg the first time key is seen.
func (c *Controller) logOnce(log klog.Logger, key, msg string, kv ...any) {
	c.mu.Lock()
	seen := c.logged[key]
	c.logged[key] = true
	c.mu.Unlock()
	if !seen {
		log.Info(msg, kv...)
	}
}
