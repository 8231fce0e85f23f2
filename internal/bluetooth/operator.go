// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/hci"
	"github.com/liken-sh/operators/internal/hid"
	"github.com/liken-sh/operators/internal/pairing"
	"github.com/liken-sh/operators/internal/settle"
	"github.com/liken-sh/operators/internal/uevent"
)

// Defaults of Config.
const (
	DefaultBondsRoot = "/var/lib/bluetooth"
	// DefaultBackstop is the pass every minute that catches anything the
	// event sources missed (a lost uevent, a signal dropped by the bus).
	DefaultBackstop = time.Minute
	// retryAfter is the one extra pass after a failed one.
	retryAfter = 5 * time.Second
	// flushTimeout bounds the wait for the API server to hold the
	// all-tainted set when bluetoothd has left.
	flushTimeout = 10 * time.Second
)

// Config is what the operator runs with. NodeName, Namespace and
// KubeClient are required; the rest defaults to the paths of deploy/bluetooth/operator.yaml's pod.
type Config struct {
	NodeName   string               // the node, from the downward API
	Namespace  string               // where the bond Secrets live (POD_NAMESPACE)
	KubeClient kubernetes.Interface // slices, claims, Secrets
	// Dynamic reaches Adapters, Peripherals and PairingRequests; nil runs
	// the operator without the pairing API.
	Dynamic dynamic.Interface
	// Adapter is the adapter this pod claimed. Zero means the one
	// bondfetch recorded in BondsRoot (bonds.ReadClaimed); with no record
	// either, the operator serves the only adapter bluetoothd reports,
	// and with several it publishes them all and runs no pairing API.
	Adapter bdaddr.Address

	// Relay gives claims in relay mode (the default) their nodes; nil
	// means no relay is available, and relay mode delivers the
	// controller's own nodes as direct mode does.
	Relay Relay

	Bus       bluez.Options // the bus of the bluetoothd sidecar; Address empty = DBUS_SYSTEM_BUS_ADDRESS
	BondsRoot string        // BlueZ's storage tree, shared with bluetoothd
	SysRoot   string        // sysfs, for HID discovery
	DevRoot   string        // /dev, for evdev node paths
	// DRA locates the kubelet and CDI directories; DriverName, CDIClass,
	// NodeName and KubeClient are filled in by Run.
	DRA dra.Options
	// BondSettle is the settle window of bond write-back; zero means the
	// core's slice window, because BlueZ writes parts of a bond on an idle
	// callback after pairing.
	BondSettle time.Duration
	Backstop   time.Duration
	// ReconnectFirst and ReconnectCeiling time the connects of a held
	// speaker that is not connected (Reconnectable): the wait after the
	// first failed attempt, doubling after each further one up to the
	// ceiling. Zero means DefaultReconnectFirst (10 s) and
	// DefaultReconnectCeiling (2 min).
	ReconnectFirst   time.Duration
	ReconnectCeiling time.Duration
	Registerer       prometheus.Registerer
}

func (c *Config) complete() error {
	switch {
	case c.NodeName == "":
		return errors.New("the node name is required (NODE_NAME)")
	case c.Namespace == "":
		return errors.New("the namespace of the bond Secrets is required (POD_NAMESPACE)")
	case c.KubeClient == nil:
		return errors.New("an API client is required")
	}
	if c.BondsRoot == "" {
		c.BondsRoot = DefaultBondsRoot
	}
	if c.SysRoot == "" {
		c.SysRoot = hid.DefaultSysRoot
	}
	if c.DevRoot == "" {
		c.DevRoot = hid.DefaultDevRoot
	}
	if c.BondSettle <= 0 {
		c.BondSettle = dra.DefaultSettleQuiet
	}
	if c.Backstop <= 0 {
		c.Backstop = DefaultBackstop
	}
	if c.ReconnectFirst <= 0 {
		c.ReconnectFirst = DefaultReconnectFirst
	}
	if c.ReconnectCeiling <= 0 {
		c.ReconnectCeiling = DefaultReconnectCeiling
	}
	c.DRA.DriverName, c.DRA.CDIClass = DriverName, CDIClass
	c.DRA.NodeName, c.DRA.KubeClient, c.DRA.Registerer = c.NodeName, c.KubeClient, c.Registerer
	return nil
}

// Run is the operator: it waits for bluetoothd on the bus, serves the
// kubelet, and on every change (a BlueZ signal, a HID uevent, the backstop)
// reads bluetoothd's objects and the HID devices, asserts page scan,
// publishes the device set, and, after the bond settle window, writes
// every bond bluetoothd holds back to its Secret. Beside that it follows
// the ResourceClaims of the audio driver's pool on this node and connects
// the speakers they hold while those are not connected (Reconnectable),
// at once and then with waits doubling from ReconnectFirst to
// ReconnectCeiling.
//
// It returns nil when ctx ends (SIGTERM: a clean exit, the slice stays for
// the next pod) and an error otherwise: bluetoothd or the bus did not
// appear in time, bluetoothd left the bus or the bus connection broke (the
// kubelet restarts this container beside the new daemon; before returning,
// Run publishes every device tainted and waits up to 10 s for the API
// server to hold that), the uevent socket failed, or the DRA plugin
// stopped.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.complete(); err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	client, err := bluez.Connect(ctx, cfg.Bus)
	if err != nil {
		return err
	}
	defer client.Close()
	logger.Info("bluetoothd is on the bus", "owner", client.Owner())

	discover := func(context.Context) (EvdevNodes, error) {
		scan, err := hid.Discover(cfg.SysRoot, cfg.DevRoot)
		return scan, err
	}
	// Prepare hands out only what the latest pass published.
	published := &publishedSet{}
	delivery := Delivery{Published: published.has, Nodes: discover, Relay: cfg.Relay}
	// An unprepared claim's virtual devices go at the next pass, which a
	// change of the prepared claims asks for at once.
	claimsChanged := make(chan struct{}, 1)
	if cfg.DRA.OnClaimsChanged == nil {
		cfg.DRA.OnClaimsChanged = func() {
			select {
			case claimsChanged <- struct{}{}:
			default:
			}
		}
	}
	driver, err := dra.Start(ctx, cfg.DRA, Prepare(delivery))
	if err != nil {
		return err
	}
	defer driver.Stop()

	events, err := uevent.Listen(ctx, uevent.Options{})
	if err != nil {
		return fmt.Errorf("uevents: %w", err)
	}
	if ok, err := uevent.InInitialUserNamespace(); err == nil && !ok {
		logger.Error(nil, "Not in the initial user namespace: the kernel sends this process no uevents, so controllers appear only at the backstop pass (deploy/bluetooth/operator.yaml sets hostUsers: true)")
	}

	op := &operator{cfg: cfg, client: client, driver: driver, published: published, delivery: delivery, tracker: hid.NewTracker(), claimsChanged: claimsChanged,
		bondWindow: settle.New(cfg.BondSettle, dra.DefaultSettleCap),
		problems:   newPassProblems(), bondSkips: map[bdaddr.Address]*problemLog{},
		bondsSeen: map[bdaddr.Address][32]byte{},
		seeded:    map[bdaddr.Address]bool{},
		adapter:   cfg.Adapter, others: map[string]bool{}}
	if op.adapter.IsZero() {
		a, ok, err := bonds.ReadClaimed(cfg.BondsRoot)
		switch {
		case err != nil:
			return fmt.Errorf("the claimed adapter: %w", err)
		case ok:
			op.adapter = a
			logger.Info("Serving the adapter this pod claimed", "adapter", a)
		}
	}
	defer func() {
		if op.hci != nil {
			op.hci.Close()
		}
	}()
	op.recorder = newRecorder(ctx, cfg.KubeClient)
	stopReconnect, err := op.startReconnect(ctx)
	if err != nil {
		return err
	}
	defer stopReconnect()
	watchBondSecrets(ctx, cfg.KubeClient, cfg.Namespace, func(name string) {
		logger.Info("A bond Secret was deleted; writing the bonds BlueZ holds back", "secret", name)
		op.mu.Lock()
		op.forgetBonds = true
		op.mu.Unlock()
		op.bondWindow.Poke()
	}, op.bondSecretEdited)
	// The window ends with the loop, whether ctx ended (SIGTERM) or the
	// loop failed (bluetoothd left the bus); what it still owes is
	// written then.
	windowCtx, stopWindow := context.WithCancel(ctx)
	bondsDone := make(chan struct{})
	go func() {
		defer close(bondsDone)
		op.bondWindow.Run(windowCtx, op.syncBonds)
	}()
	err = op.loop(ctx, events)
	stopWindow()
	<-bondsDone
	op.flushBonds(ctx)
	return err
}

// FlushBondsTimeout bounds the last bond write-back at exit, well inside
// the kubelet's default 30 s termination grace period.
const FlushBondsTimeout = 5 * time.Second

// flushBonds writes back, once, bonds that changed within the settle
// window before the operator stopped (a pairing finished, or BlueZ
// updated a bond's files, moments before SIGTERM): without it, the next
// pod's bondfetch would restore the older bond. It runs after the
// window's goroutine ended, so syncBonds never runs twice at once.
func (o *operator) flushBonds(ctx context.Context) {
	if !o.bondWindow.Pending() {
		return
	}
	flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), FlushBondsTimeout)
	defer cancel()
	klog.FromContext(ctx).Info("Writing back the bonds that changed just before the stop")
	o.syncBonds(flush)
}

// startPairing starts the pairing API for adapter once it is known.
func (o *operator) startPairing(ctx context.Context) error {
	if o.pairing != nil || o.cfg.Dynamic == nil || o.adapter.IsZero() {
		return nil
	}
	p, err := pairing.New(pairing.Config{
		Node: o.cfg.NodeName, Namespace: o.cfg.Namespace, Adapter: o.adapter,
		Client: o.cfg.Dynamic, Kube: o.cfg.KubeClient, Radio: o.client, SysRoot: o.cfg.SysRoot,
		BondsRoot: o.cfg.BondsRoot, Registerer: o.cfg.Registerer,
	})
	if err != nil {
		return err
	}
	p.Start(ctx)
	o.pairing = p
	return nil
}

// operator is the state of one Run.
type operator struct {
	cfg       Config
	client    *bluez.Client
	driver    *dra.Driver
	published *publishedSet // the names of the set last passed to SetDevices
	delivery  Delivery      // what Prepare was started with
	// specNodes is the controllers' evdev nodes (nodesKey) the prepared
	// claims' specs were last brought up to date with; "" until then.
	specNodes     string
	claimsChanged <-chan struct{} // a claim was prepared or unprepared
	tracker       *hid.Tracker
	inventory     Inventory
	bondWindow    *settle.Window
	problems      *passProblems                  // the loop's
	bondSkips     map[bdaddr.Address]*problemLog // by adapter; syncBonds's
	bondsSeen     map[bdaddr.Address][32]byte    // by adapter: the bonds syncBonds last wrote back without error (bondsDigest)
	seeded        map[bdaddr.Address]bool        // by adapter: the input relay has the snapshots kept with its bonds

	adapter bdaddr.Address      // the one served; zero: all (no claim known)
	others  map[string]bool     // adapters left alone, logged once each
	pairing *pairing.Controller // nil until the adapter is known, or without Dynamic
	follow  *time.Timer         // the pairing API's follow-up pass
	hci     *hci.Socket         // for the page-scan flag; nil until first used

	reconnect *reconnector // connects the speakers claims hold; nil until Run starts it

	mu   sync.Mutex
	live []bdaddr.Address // the adapters of the latest pass, for bond sync
	skip []bdaddr.Address // peers whose bond Secret is not rewritten (unpairing)
	// forgetBonds: a bond Secret was deleted since syncBonds last ran, so
	// bondsSeen no longer says what the API server holds.
	forgetBonds bool
	// edited: the bond Secrets whose data changed since syncBonds last
	// ran, by name, as watchBondSecrets caches them.
	edited   map[string]*corev1.Secret
	owners   map[bdaddr.Address]metav1.OwnerReference
	recorder events.EventRecorder // Events on bond Secrets
}

func (o *operator) loop(ctx context.Context, events *uevent.Listener) error {
	logger := klog.FromContext(ctx)
	backstop := time.NewTicker(o.cfg.Backstop)
	defer backstop.Stop()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	o.follow = time.NewTimer(time.Hour)
	o.follow.Stop()
	for {
		var pairingWake <-chan struct{}
		if o.pairing != nil {
			pairingWake = o.pairing.Wake()
		}
		if err := o.pass(ctx); err != nil {
			logger.Error(err, "Pass failed; one retry follows", "after", retryAfter)
			retry.Reset(retryAfter)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-o.client.Done():
			if ctx.Err() != nil {
				return nil
			}
			// The client's error already says what happened
			// (bluez.ErrBlueZGone or bluez.ErrConnectionLost, with
			// detail); wrapping it would say it twice.
			err := o.client.Err()
			if err == nil {
				err = bluez.ErrBlueZGone
			}
			o.departAll(ctx)
			return err
		case <-o.driver.Done():
			if ctx.Err() != nil {
				// The plugin stops with ctx too; whichever case the
				// select picks, the end of ctx is a clean exit.
				return nil
			}
			return fmt.Errorf("DRA plugin stopped: %w", o.driver.Err())
		case <-events.Done():
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("uevent listener stopped: %w", events.Err())
		case <-o.client.Changes():
			drain(o.client.Changes()) // one pass covers a burst of signals
		case ev := <-events.Events():
			if !o.tracker.Observe(ev).Relevant {
				continue
			}
		case err := <-events.Errors():
			if !errors.Is(err, uevent.ErrOverflow) {
				logger.V(2).Info("Ignoring a uevent datagram", "err", err)
				continue
			}
			logger.Info("Uevents were lost; rescanning")
		case <-o.claimsChanged:
		case <-backstop.C:
		case <-retry.C:
		case <-o.follow.C:
		case <-pairingWake:
		}
	}
}

// pass reads everything and publishes the result.
func (o *operator) pass(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	objs, err := o.client.ManagedObjects(ctx)
	if err != nil {
		return err
	}
	nodeAdapters := []string{}
	for _, a := range objs.Adapters {
		nodeAdapters = append(nodeAdapters, a.Address)
	}
	objs = o.scope(ctx, objs)
	o.reconnect.observe(objs.Devices)
	if err := o.startPairing(ctx); err != nil {
		return err
	}
	var live []bdaddr.Address
	for _, a := range objs.Adapters {
		if a.NeedsPageScan() {
			// A BlueZ that offers Adapter1.Connectable (5.66 does not)
			// is asked for page scan outright. Without the property the
			// kernel page-scans for the bonded devices bluetoothd put
			// on its accept list, and the Adapter's PageScan condition
			// reports what the kernel does (pairing, pageScan).
			if err := o.client.SetConnectable(ctx, a.Path); err != nil {
				logger.Error(err, "Asserting page scan", "adapter", a.Address)
			} else {
				logger.Info("Turned page scan on", "adapter", a.Address)
			}
		}
		if addr, err := bdaddr.Parse(a.Address); err == nil && !addr.IsZero() {
			live = append(live, addr)
		}
	}
	scan, err := hid.Discover(o.cfg.SysRoot, o.cfg.DevRoot)
	if err != nil {
		return fmt.Errorf("HID discovery: %w", err)
	}
	// At once, before the slice and the pairing API: a spec may name a
	// number the kernel has freed until this rewrite.
	o.refreshSpecs(ctx, scan)
	o.tracker.Reset(scan.Devices)
	o.inventory.Observe(objs)
	o.inventory.ObserveHID(scan.Devices)
	if peers, ok := o.relayablePeers(ctx); ok {
		o.inventory.SetRelayable(peers)
	}
	devices, problems := o.inventory.Devices(scan)
	o.problems.report(logger, objs.Problems, scan.Skipped, problems)
	var res pairing.Result
	var pairErr error
	if o.pairing != nil {
		// A speaker is also held through the audio driver: while an
		// unpair waits, a claim of its sink keeps it waiting and is shown
		// as the Peripheral's claim, as one of this driver's is. Read
		// only then: listing every claim in the cluster at each pass
		// (the backstop runs every minute) would be API traffic at rest.
		holders := o.driver.Holders()
		if o.pairing.Unpairing() {
			audio, err := pairing.ListAudioHolders(ctx, o.cfg.KubeClient)
			if err != nil {
				logger.Error(err, "Reading the audio claims that hold speakers")
			}
			for k, h := range audio {
				if _, ok := holders[k]; !ok {
					holders[k] = h
				}
			}
		}
		in := pairing.Input{
			Objects:    objs,
			InputNodes: func(addr string) []string { return scan.EventNodes(addr, "") },
			HIDDevPath: func(addr string) string { return hidDevPath(scan, addr) },
			Holders:    holders,

			NodeAdapters: nodeAdapters,
		}
		if len(objs.Adapters) == 1 {
			in.PageScan, in.PageScanErr = o.readPageScan(objs.Adapters[0].Path)
		}
		res, pairErr = o.pairing.Pass(ctx, in)
		if res.After > 0 {
			o.follow.Reset(res.After)
		}
		devices = keepOut(devices, res.KeepOut)
	}
	if err := o.driver.SetDevices(devices); err != nil {
		return err
	}
	o.published.set(devices)
	if len(res.KeepOut) > 0 {
		// An unpaired device leaves BlueZ only once no slice offers it.
		flush, cancel := context.WithTimeout(ctx, flushTimeout)
		if err := o.driver.Flush(flush); err == nil {
			o.pairing.Retired(res.KeepOut)
		}
		cancel()
	}
	o.mu.Lock()
	o.live, o.skip, o.owners = live, res.SkipBonds, res.Owners
	o.mu.Unlock()
	o.bondWindow.Poke()
	if gone := o.inventory.Departed(); len(gone) > 0 {
		return fmt.Errorf("adapters %v left bluetoothd", gone)
	}
	return pairErr
}

// refreshSpecs brings the CDI specs of prepared claims on controllers up
// to date (Delivery.CurrentEdits) when the controllers' evdev nodes, or
// the input relay's, differ from those the specs were last brought up to
// date with, and at the first pass (specs prepared before this process started). A refresh
// that fails is tried again at the next pass.
func (o *operator) refreshSpecs(ctx context.Context, scan hid.Scan) {
	key := nodesKey(scan) + o.keepRelayClaims(ctx)
	if key == o.specNodes {
		return
	}
	if _, err := o.driver.RefreshClaimEdits(ctx, o.delivery.CurrentEdits(ctx)); err != nil {
		klog.FromContext(ctx).Error(err, "Bringing prepared claims' CDI specs up to date with the controllers' input nodes")
		return
	}
	o.specNodes = key
}

// nodesKey describes every evdev node of a scan with its device's
// address and its number, in the scan's order; never "".
func nodesKey(scan hid.Scan) string {
	var b strings.Builder
	b.WriteString("nodes:")
	for _, d := range scan.Devices {
		for _, n := range d.Nodes {
			fmt.Fprintf(&b, " %s=%s", d.Address, n)
		}
	}
	return b.String()
}

// readPageScan asks the kernel whether the adapter at BlueZ's object path
// (/org/bluez/hciN) page-scans: HCIGETDEVINFO on an unbound HCI socket,
// which takes no capability. The socket is opened on first use and kept.
func (o *operator) readPageScan(path dbus.ObjectPath) (*bool, error) {
	base := string(path)[strings.LastIndexByte(string(path), '/')+1:]
	n, err := strconv.ParseUint(strings.TrimPrefix(base, "hci"), 10, 16)
	if err != nil || !strings.HasPrefix(base, "hci") {
		return nil, fmt.Errorf("BlueZ's adapter path %s names no hciN", path)
	}
	if o.hci == nil {
		if o.hci, err = hci.OpenSocket(); err != nil {
			return nil, err
		}
	}
	info, err := o.hci.DevInfo(uint16(n))
	if err != nil {
		return nil, err
	}
	on := info.PageScan()
	return &on, nil
}

// scope keeps the adapter this operator serves and its devices, and says
// once per adapter that another is left alone. With no adapter known and
// exactly one reported, that one is served from now on.
func (o *operator) scope(ctx context.Context, objs bluez.Objects) bluez.Objects {
	if o.adapter.IsZero() && len(objs.Adapters) == 1 {
		if a, err := bdaddr.Parse(objs.Adapters[0].Address); err == nil && !a.IsZero() {
			o.adapter = a
			klog.FromContext(ctx).Info("No claimed adapter recorded; serving the only adapter bluetoothd reports", "adapter", a)
		}
	}
	if o.adapter.IsZero() {
		return objs
	}
	out := bluez.Objects{Problems: objs.Problems}
	var mine dbus.ObjectPath
	for _, a := range objs.Adapters {
		if addr, err := bdaddr.Parse(a.Address); err == nil && addr == o.adapter {
			out.Adapters = append(out.Adapters, a)
			mine = a.Path
			continue
		}
		if !o.others[a.Address] {
			o.others[a.Address] = true
			klog.FromContext(ctx).Info("Leaving alone an adapter this pod did not claim: its devices are not published, its bonds not written back, and no pairing runs on it",
				"adapter", a.Address, "path", a.Path, "served", o.adapter)
		}
	}
	for _, d := range objs.Devices {
		if mine != "" && d.Adapter == mine {
			out.Devices = append(out.Devices, d)
		}
	}
	return out
}

// keepOut drops the named devices.
func keepOut(devices []dra.Device, names []string) []dra.Device {
	if len(names) == 0 {
		return devices
	}
	return slices.DeleteFunc(devices, func(d dra.Device) bool { return slices.Contains(names, d.Name) })
}

// hidDevPath is the sysfs path of the peer's first HID device.
func hidDevPath(scan hid.Scan, addr string) string {
	for _, d := range scan.Devices {
		if strings.EqualFold(d.Address, addr) {
			return d.DevPath
		}
	}
	return ""
}

// departAll publishes every device as its adapter's departure leaves it
// (media buses and controllers tainted TaintDisconnected) and waits, at
// most flushTimeout, until the API server holds that set. It runs when
// bluetoothd has left the bus: nothing it reported holds any more, and the
// kubelet may take long to restart this container (crash-loop backoff),
// during which the slice must not offer connected controllers. Errors are
// logged; the caller exits with its own.
func (o *operator) departAll(ctx context.Context) {
	logger := klog.FromContext(ctx)
	o.inventory.Observe(bluez.Objects{})
	// No input nodes: BlueZ's uhid devices end with bluetoothd.
	devices, _ := o.inventory.Devices(nil)
	if len(devices) == 0 {
		// No pass read bluetoothd before it left (a restart that found
		// it going): an empty set would take every device, and the
		// claims that hold them, out of the slice. The slice is left as
		// the last run published it.
		logger.Info("bluetoothd left before this run read it; the published devices are left as they are")
		return
	}
	if err := o.driver.SetDevices(devices); err != nil {
		logger.Error(err, "Publishing every device tainted after bluetoothd left")
		return
	}
	o.published.set(devices)
	flush, cancel := context.WithTimeout(ctx, flushTimeout)
	defer cancel()
	if err := o.driver.Flush(flush); err != nil {
		logger.Error(err, "The all-tainted device set may not have reached the API server", "waited", flushTimeout)
		return
	}
	logger.Info("Published every device tainted: bluetoothd left the bus", "devices", len(devices))
}

// bondsDigest is a SHA-256 over everything bonds.SyncOwned writes for
// found: each bond's device, info and cache, and the owner reference each
// device's Secret is given. Every field is length-prefixed, so two
// different sets never hash the same input.
func bondsDigest(found []bonds.Bond, owners map[bdaddr.Address]metav1.OwnerReference) [32]byte {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, b := range found {
		field([]byte(b.Device.String()))
		field(b.Info)
		field(b.Cache)
		field(b.Input)
		owner := owners[b.Device]
		field([]byte(owner.APIVersion + "/" + owner.Kind + "/" + owner.Name + "/" + string(owner.UID)))
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// syncBonds writes every bond of the live adapters back to its Secret.
func (o *operator) syncBonds(ctx context.Context) {
	logger := klog.FromContext(ctx)
	o.mu.Lock()
	live, skip, owners := o.live, o.skip, o.owners
	if o.forgetBonds {
		// A Secret went: what was last written is no proof of what is
		// stored, so every adapter's bonds are written again.
		clear(o.bondsSeen)
		o.forgetBonds = false
	}
	edited := o.edited
	o.edited = nil
	o.mu.Unlock()
	inputs := o.relayInputs(ctx)
	for _, adapter := range live {
		o.seedRelay(ctx, adapter)
		found, skipped, err := bonds.ReadTree(o.cfg.BondsRoot, adapter)
		if err != nil {
			logger.Error(err, "Reading bonds", "adapter", adapter)
			continue
		}
		// What the input relay knows each controller to be goes with its
		// bond; without an answer from the relay the Secrets keep theirs.
		for i := range found {
			found[i].Input = inputs[found[i].Device]
		}
		// A bond being unpaired keeps its Secret as it is until garbage
		// collection takes it with the Peripheral.
		found = slices.DeleteFunc(found, func(b bonds.Bond) bool { return slices.Contains(skip, b.Device) })
		// A Secret changed behind the operator's back (a hand edit) and
		// no longer holding BlueZ's bond is written over at once, as a
		// deleted one is written again.
		stale := o.staleSecrets(ctx, adapter, found, skip, edited)
		skips := o.bondSkips[adapter]
		if skips == nil {
			skips = &problemLog{what: "Bond left out of write-back"}
			o.bondSkips[adapter] = skips
		}
		skips.update(logger.WithValues("adapter", adapter), skipped)
		// Bonds already written back as they are now cost no request: a
		// node at rest reads its tree and asks the API server nothing.
		// A Secret deleted behind the operator's back is written again
		// at once (watchBondSecrets).
		digest := bondsDigest(found, owners)
		if seen, ok := o.bondsSeen[adapter]; ok && seen == digest && len(stale) == 0 {
			continue
		}
		report, err := bonds.SyncOwned(ctx, o.cfg.KubeClient.CoreV1().Secrets(o.cfg.Namespace), o.cfg.Namespace, found, owners)
		if err != nil {
			logger.Error(err, "Writing bonds back", "adapter", adapter)
			delete(o.bondsSeen, adapter)
		} else {
			o.bondsSeen[adapter] = digest
		}
		o.reportRepairs(ctx, adapter, stale, report.Updated, err)
		if len(report.Created)+len(report.Updated) > 0 {
			logger.Info("Bonds written back", "adapter", adapter, "created", report.Created, "updated", report.Updated)
		}
	}
}

// drain empties a channel that is not closed, without blocking.
func drain[T any](ch <-chan T) {
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		default:
			return
		}
	}
}
