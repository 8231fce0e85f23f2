// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package relayd

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/evdev"
	"github.com/liken-sh/operators/internal/hid"
	"github.com/liken-sh/operators/internal/inputrelay"
)

// Config says where the daemon finds the kernel and keeps its state.
type Config struct {
	// UinputPath is the uinput node (uinput.DefaultPath).
	UinputPath string
	// SysRoot and DevRoot are the sysfs and /dev roots the HID discovery
	// walks (hid.DefaultSysRoot, hid.DefaultDevRoot).
	SysRoot, DevRoot string
	// StatePath is the state file; "" keeps no state across restarts.
	StatePath string
	// Rescan is how often Run walks the devices with no uevent asking it
	// to; 0 means DefaultRescan.
	Rescan time.Duration
}

// ErrNoSnapshot is returned by Attach for a controller the daemon has
// never seen connected: it cannot know what devices to make for it.
var ErrNoSnapshot = errors.New("has not connected since the relay started keeping its capabilities; wake it once")

// errOtherController is returned by Attach for a claim already made for
// another controller.
var errOtherController = errors.New("already has the devices of controller")

// badRequest is an Attach error about the request's form.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

// Daemon is the relay daemon's state. It is safe for concurrent use.
type Daemon struct {
	cfg Config

	mu        sync.Mutex
	claims    map[string]*claim               // by claim UID
	snapshots map[string][]evdev.Capabilities // by controller address, BlueZ spelling
	lastErr   error
}

// claim is one prepared claim's relays: one per input device of its
// controller, in the order of the controller's snapshot.
type claim struct {
	address string
	sysRoot string // where the relays' devices are looked up (Config.SysRoot)
	relays  []*inputrelay.Relay
}

// uidPattern is what a claim UID may look like (an RFC 4122 UUID from the
// API server); it becomes a key of the state file.
var uidPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,127}$`)

// New loads the state file, if any, and makes the virtual devices of the
// claims it records. A claim whose devices cannot be made (uinput refuses)
// fails New, naming the claim: a daemon that silently dropped a prepared
// claim would leave its consumer reading nothing.
func New(cfg Config) (*Daemon, error) {
	d := &Daemon{cfg: cfg, claims: map[string]*claim{}, snapshots: map[string][]evdev.Capabilities{}}
	st, err := loadState(cfg.StatePath)
	if err != nil {
		return nil, err
	}
	d.snapshots = st.Snapshots
	for _, uid := range slices.Sorted(maps.Keys(st.Claims)) {
		c, err := d.makeClaim(st.Claims[uid])
		if err != nil {
			d.closeAll()
			return nil, fmt.Errorf("relayd: claim %s: %w", uid, err)
		}
		d.claims[uid] = c
	}
	return d, nil
}

// makeClaim makes the relays of a claim on address from its snapshot.
func (d *Daemon) makeClaim(address string) (*claim, error) {
	snaps := d.snapshots[address]
	if len(snaps) == 0 {
		return nil, fmt.Errorf("controller %s %w", address, ErrNoSnapshot)
	}
	c := &claim{address: address, sysRoot: d.cfg.SysRoot}
	for _, caps := range snaps {
		r, err := inputrelay.New(d.cfg.UinputPath, caps)
		if err != nil {
			c.close()
			return nil, err
		}
		c.relays = append(c.relays, r)
	}
	return c, nil
}

func (c *claim) close() {
	for _, r := range c.relays {
		r.Close()
	}
}

func (d *Daemon) closeAll() {
	for _, c := range d.claims {
		c.close()
	}
}

// Close destroys every virtual device. The state file is kept, so a
// daemon started again makes them again.
func (d *Daemon) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closeAll()
	d.claims = map[string]*claim{}
}

// Attach makes claim uid's virtual devices for the controller at address
// (any spelling bdaddr.Parse takes) and returns their event nodes. Asking
// again for the same claim and controller returns the same devices. The
// devices are fed from the controller whenever it is connected, from now
// on. Errors: a UID or address that is malformed, a claim already made for
// another controller, a controller never seen connected (ErrNoSnapshot),
// a device uinput refused, or a state file that could not be written (the
// devices are then undone).
func (d *Daemon) Attach(uid, address string) (ClaimStatus, error) {
	if !uidPattern.MatchString(uid) {
		return ClaimStatus{}, &badRequest{fmt.Sprintf("claim UID %q is not a UID", uid)}
	}
	addr, err := bdaddr.Parse(address)
	if err != nil {
		return ClaimStatus{}, &badRequest{fmt.Sprintf("controller address %q: %v", address, err)}
	}
	address = addr.String()
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.claims[uid]; ok {
		if c.address != address {
			return ClaimStatus{}, fmt.Errorf("claim %s %w %s, not %s", uid, errOtherController, c.address, address)
		}
		return c.status()
	}
	// A node that cannot be opened now is retried by Run; the walk is
	// here for a controller seen for the first time.
	_ = d.reconcileLocked()
	c, err := d.makeClaim(address)
	if err != nil {
		return ClaimStatus{}, err
	}
	d.claims[uid] = c
	if err := d.saveLocked(); err != nil {
		delete(d.claims, uid)
		c.close()
		return ClaimStatus{}, err
	}
	_ = d.reconcileLocked() // feeds the new devices now if the controller is here
	return c.status()
}

// Release destroys claim uid's virtual devices; a claim the daemon does
// not hold is already released. The error is the state file's.
func (d *Daemon) Release(uid string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.claims[uid]
	if !ok {
		return nil
	}
	delete(d.claims, uid)
	c.close()
	return d.saveLocked()
}

// Status returns every claim's devices and whether its controller is
// feeding them now, by claim UID.
func (d *Daemon) Status() (map[string]ClaimStatus, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]ClaimStatus, len(d.claims))
	for uid, c := range d.claims {
		s, err := c.status()
		if err != nil {
			return nil, fmt.Errorf("claim %s: %w", uid, err)
		}
		out[uid] = s
	}
	return out, nil
}

func (c *claim) status() (ClaimStatus, error) {
	s := ClaimStatus{Address: c.address, Attached: len(c.relays) > 0}
	for _, r := range c.relays {
		n, err := r.Device().EventNode(c.sysRoot)
		if err != nil {
			return ClaimStatus{}, err
		}
		s.Nodes = append(s.Nodes, Node{Name: n.Name, Major: n.Major, Minor: n.Minor, Device: r.Capabilities().Name})
		if r.Source() == "" {
			s.Attached = false
		}
	}
	return s, nil
}

// Snapshots returns what the daemon knows each controller to be, by
// address (BlueZ spelling): the snapshot its first connection gave, with
// each axis's resting value as the claims' relays learned it.
func (d *Daemon) Snapshots() map[string][]evdev.Capabilities {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string][]evdev.Capabilities, len(d.snapshots))
	for address, snaps := range d.snapshots {
		out[address] = slices.Clone(snaps)
	}
	for _, c := range d.claims {
		if len(c.relays) != len(out[c.address]) {
			continue
		}
		for i, r := range c.relays {
			out[c.address][i] = r.Capabilities()
		}
	}
	return out
}

// Seed gives the daemon a controller's snapshot kept elsewhere (with the
// controller's bond), so a claim on it gets devices before it connects.
// A snapshot the daemon already has is kept: the controller's own
// connection is the better source. Each entry must pass evdev's checks,
// and there must be 1 to MaxDevices of them; the error names the first
// that does not, and nothing is stored. A snapshot that would take the
// state file over its bound is refused too, and not kept.
func (d *Daemon) Seed(address string, snaps []evdev.Capabilities) error {
	addr, err := bdaddr.Parse(address)
	if err != nil {
		return &badRequest{fmt.Sprintf("controller address %q: %v", address, err)}
	}
	if len(snaps) == 0 {
		return &badRequest{"no input device in the snapshot"}
	}
	if len(snaps) > MaxDevices {
		return &badRequest{fmt.Sprintf("%d input devices in the snapshot, more than the %d a controller may have", len(snaps), MaxDevices)}
	}
	for i := range snaps {
		if err := snaps[i].Validate(); err != nil {
			return &badRequest{fmt.Sprintf("input device %d: %v", i, err)}
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.snapshots[addr.String()]) > 0 {
		return nil
	}
	d.snapshots[addr.String()] = slices.Clone(snaps)
	if err := d.saveLocked(); err != nil {
		delete(d.snapshots, addr.String())
		return err
	}
	return nil
}

// Reconcile walks the kernel's Bluetooth HID devices once: it records the
// capabilities of a controller it has no snapshot of, and attaches each
// controller's nodes to the claims' relays that are waiting for them. It
// returns the last problem met (a node that could not be opened), after
// doing the rest.
func (d *Daemon) Reconcile() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reconcileLocked()
}

func (d *Daemon) reconcileLocked() error {
	scan, err := hid.Discover(d.cfg.SysRoot, d.cfg.DevRoot)
	if err != nil {
		return err
	}
	var problem error
	byAddress := map[string][]string{}
	for _, dev := range scan.Devices {
		for _, n := range dev.Nodes {
			byAddress[dev.Address] = append(byAddress[dev.Address], n.Path)
		}
	}
	// What each snapshot replaced, to put back when the state file
	// refuses the new ones.
	replaced := map[string][]evdev.Capabilities{}
	for address, nodes := range byAddress {
		waiting := d.waitingLocked(address)
		if len(nodes) == 0 || (len(d.snapshots[address]) >= len(nodes) && len(waiting) == 0) {
			continue
		}
		slices.Sort(nodes)
		if len(nodes) > MaxDevices {
			problem = fmt.Errorf("controller %s has %d input nodes; the relay records and relays the first %d", address, len(nodes), MaxDevices)
			nodes = nodes[:MaxDevices]
		}
		var found []foundNode
		for _, path := range nodes {
			f, err := evdev.Open(path)
			if err != nil {
				problem = err
				continue
			}
			caps, err := evdev.ReadCapabilities(f)
			f.Close()
			if err != nil {
				problem = err
				continue
			}
			found = append(found, foundNode{path, caps})
		}
		if len(found) > len(d.snapshots[address]) {
			snaps := make([]evdev.Capabilities, len(found))
			for i, f := range found {
				snaps[i] = f.caps
			}
			if _, ok := replaced[address]; !ok {
				replaced[address] = d.snapshots[address]
			}
			d.snapshots[address] = snaps
		}
		for _, c := range waiting {
			if err := c.attach(found); err != nil {
				problem = err
			}
		}
	}
	if len(replaced) > 0 {
		if err := d.saveLocked(); err != nil {
			problem = err
			for address, old := range replaced {
				if old == nil {
					delete(d.snapshots, address)
				} else {
					d.snapshots[address] = old
				}
			}
		}
	}
	d.lastErr = problem
	return problem
}

// foundNode is one event node of a controller with what it is.
type foundNode struct {
	path string
	caps evdev.Capabilities
}

// waitingLocked returns the claims on address with a relay that has no
// source.
func (d *Daemon) waitingLocked(address string) []*claim {
	var out []*claim
	for _, uid := range slices.Sorted(maps.Keys(d.claims)) {
		c := d.claims[uid]
		if c.address != address {
			continue
		}
		for _, r := range c.relays {
			if r.Source() == "" {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// attach gives each relay of c without a source the first node of the
// same kind that no other relay of c holds.
func (c *claim) attach(nodes []foundNode) error {
	held := map[string]bool{}
	for _, r := range c.relays {
		if s := r.Source(); s != "" {
			held[s] = true
		}
	}
	var problem error
	for _, r := range c.relays {
		if r.Source() != "" {
			continue
		}
		want := r.Capabilities()
		for _, n := range nodes {
			if held[n.path] || !evdev.SameDevice(want, n.caps) {
				continue
			}
			f, err := evdev.Open(n.path)
			if err == nil {
				err = r.Attach(f)
			}
			if err != nil {
				problem = err
				continue
			}
			held[n.path] = true
			break
		}
	}
	return problem
}
