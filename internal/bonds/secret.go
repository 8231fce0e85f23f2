// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/bdaddr"
)

// The layout of a bond's Secret: its labels and data keys.
const (
	// AdapterLabel carries the adapter's address in key spelling
	// (bdaddr.Address.Key): the bonds of a radio are the Secrets with this
	// label, wherever the radio is plugged in.
	AdapterLabel = "bluetooth.liken.sh/adapter"
	// AppLabel and AppName mark the Secrets as the operator's.
	AppLabel = "app.kubernetes.io/name"
	AppName  = "bluetooth-operator"
	// SecretPrefix starts the name of every bond Secret.
	SecretPrefix = "bluetooth-bond-"
	// InfoSuffix and CacheSuffix end the data keys: <device key>.info and
	// <device key>.cache.
	InfoSuffix  = ".info"
	CacheSuffix = ".cache"
	// InputSuffix ends the data key of a device's input capabilities
	// (Bond.Input): <device key>.input.
	InputSuffix = ".input"
)

// SecretName returns the name of the Secret that holds the bond between
// adapter and device: "bluetooth-bond-<adapter key>-<device key>", e.g.
// bluetooth-bond-5c-f3-70-8b-1a-2e-e4-17-d8-c5-67-6d (49 characters).
//
// The reference names it for the device alone. A speaker or headset
// remembers several hosts, so the same device can be bonded to two
// adapters whose Secrets share one namespace; with the device alone in the
// name the second bond would have nowhere to go. Secrets named the
// reference's way are still read (see DecodeSecrets).
func SecretName(adapter, device bdaddr.Address) string {
	return SecretPrefix + adapter.Key() + "-" + device.Key()
}

// InfoKey returns the data key of a device's info file, "<device key>.info".
func InfoKey(device bdaddr.Address) string { return device.Key() + InfoSuffix }

// CacheKey returns the data key of a device's cache file,
// "<device key>.cache".
func CacheKey(device bdaddr.Address) string { return device.Key() + CacheSuffix }

// InputKey returns the data key of a device's input capabilities,
// "<device key>.input".
func InputKey(device bdaddr.Address) string { return device.Key() + InputSuffix }

// EncodeSecret returns the Secret that stores b in namespace: named by
// SecretName, type Opaque, labelled with AdapterLabel and AppLabel, holding
// InfoKey and, when b has them, CacheKey and InputKey, byte for byte.
func EncodeSecret(namespace string, b Bond) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      SecretName(b.Adapter, b.Device),
			Namespace: namespace,
			Labels:    map[string]string{AdapterLabel: b.Adapter.Key(), AppLabel: AppName},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{InfoKey(b.Device): bytes.Clone(b.Info)},
	}
	if len(b.Cache) > 0 {
		s.Data[CacheKey(b.Device)] = bytes.Clone(b.Cache)
	}
	if len(b.Input) > 0 {
		s.Data[InputKey(b.Device)] = bytes.Clone(b.Input)
	}
	return s
}

// SkipError reports a Secret, or one key of it, that was not used.
type SkipError struct {
	// Secret is "<namespace>/<name>".
	Secret string
	// Key is the data key, or "" when the whole Secret was skipped.
	Key string
	// Reason says why.
	Reason string
}

// Error says "secret <ns>/<name> key "<key>" skipped: <reason>", or
// without the key when the whole Secret was skipped.
func (e *SkipError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("secret %s skipped: %s", e.Secret, e.Reason)
	}
	return fmt.Sprintf("secret %s key %q skipped: %s", e.Secret, e.Key, e.Reason)
}

// DecodeSecret reads the bonds of adapter out of one Secret, whose
// contents are untrusted. It reads the current layout (EncodeSecret) and
// the two the reference wrote before it: one Secret per adapter with a
// pair of keys per device, and bare "<device key>" keys holding the info
// file. In three passes, as the reference did:
//
//  1. "<device>.info" keys establish bonds;
//  2. bare "<device>" keys establish bonds for devices pass 1 did not;
//  3. "<device>.cache" keys attach to bonds established in this Secret.
//
// Devices may be spelt with dashes or colons, in either case. Everything
// else is skipped with a *SkipError naming the Secret and key, and the rest
// of the Secret is still read: a Secret not labelled with adapter (whole),
// a key that is not one of the three shapes around a Bluetooth address, the
// zero address, the broadcast address (FF:FF:FF:FF:FF:FF), the adapter's
// own address, a second key for the same device, an info that fails
// CheckInfo or holds no key (the check Sync makes before it stores one;
// skipped with that device's cache), a cache that fails CheckCache or has
// no bond beside it. An empty cache value counts as no cache.
//
// Bonds come back sorted by device; none is empty and every one passes
// Bond.Check. At most MaxSkipped skips in MaxSkippedBytes are listed; the
// rest are counted in a *MoreSkipped that ends the list.
func DecodeSecret(adapter bdaddr.Address, s *corev1.Secret) (bonds []Bond, skipped []error) {
	var skips skipList
	for _, f := range decodeSecret(adapter, s, &skips) {
		bonds = append(bonds, f.Bond)
	}
	return bonds, skips.errors()
}

// sourced is a decoded bond and the data key its info came from.
type sourced struct {
	Bond
	key string
}

// notDeviceKey is the reason a key that names no device is skipped for.
const notDeviceKey = "not <address>" + InfoSuffix + ", <address>" + CacheSuffix + ", <address>" + InputSuffix + " or <address>, with a Bluetooth address"

// decodeSecret is DecodeSecret, keeping each bond's key and adding what
// it skips to skips. Past the list's bounds a skip costs a count: a
// Secret of tens of thousands of keys costs the sorted list of its keys,
// beside the Secret itself.
func decodeSecret(adapter bdaddr.Address, s *corev1.Secret, skips *skipList) (bonds []sourced) {
	id := s.Namespace + "/" + s.Name
	skip := func(key, format string, args ...any) { skips.add(id, key, format, args...) }
	if got := s.Labels[AdapterLabel]; got != adapter.Key() {
		skip("", "labelled %s=%q, not this adapter's %q", AdapterLabel, got, adapter.Key())
		return nil
	}
	type entry struct {
		device bdaddr.Address
		key    string
	}
	var infos, bare, caches, inputs []entry
	keys := make([]string, 0, len(s.Data))
	for k := range s.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name, list := k, &bare
		if base, ok := strings.CutSuffix(k, InfoSuffix); ok {
			name, list = base, &infos
		} else if base, ok := strings.CutSuffix(k, CacheSuffix); ok {
			name, list = base, &caches
		} else if base, ok := strings.CutSuffix(k, InputSuffix); ok {
			name, list = base, &inputs
		}
		device, err := bdaddr.Parse(name)
		switch {
		case err != nil:
			skip(k, notDeviceKey)
		case device.IsZero():
			skip(k, "the zero address names no device")
		case device.IsBroadcast():
			skip(k, "FF:FF:FF:FF:FF:FF is the broadcast address and names no device")
		case device == adapter:
			skip(k, "%s is the adapter's own address and names no device bonded with it", device)
		default:
			*list = append(*list, entry{device, k})
		}
	}

	byDevice := map[bdaddr.Address]*Bond{}
	source := map[bdaddr.Address]string{} // the key each bond's info came from
	establish := func(entries []entry) {
		for _, e := range entries {
			if other, dup := source[e.device]; dup {
				skip(e.key, "%s already holds device %s", other, e.device)
				continue
			}
			source[e.device] = e.key
			info := s.Data[e.key]
			err := CheckInfo(info)
			if err == nil {
				// The check Sync makes before it stores a bond: a file
				// without a key would be restored as a bond that is none.
				err = checkBonded(info)
			}
			if err != nil {
				skip(e.key, "%v", err)
				byDevice[e.device] = nil // the device is known, and has no bond
				continue
			}
			byDevice[e.device] = &Bond{Adapter: adapter, Device: e.device, Info: bytes.Clone(info)}
		}
	}
	// The canonical spelling first, so that it wins over a variant.
	sort.SliceStable(infos, func(i, j int) bool {
		return infos[i].key == InfoKey(infos[i].device) && infos[j].key != InfoKey(infos[j].device)
	})
	establish(infos)
	var rest []entry
	for _, e := range bare {
		if other, done := source[e.device]; done && strings.HasSuffix(other, InfoSuffix) {
			skip(e.key, "superseded by %s", other)
			continue
		}
		rest = append(rest, e)
	}
	establish(rest)

	// attach gives each established bond the file of one more kind
	// (what: "cache"), from the canonical key first, checked by check.
	attach := func(entries []entry, what string, canonical func(bdaddr.Address) string, check func([]byte) error, set func(*Bond, []byte)) {
		attached := map[bdaddr.Address]string{}
		sort.SliceStable(entries, func(i, j int) bool {
			return entries[i].key == canonical(entries[i].device) && entries[j].key != canonical(entries[j].device)
		})
		for _, e := range entries {
			b, known := byDevice[e.device]
			switch {
			case !known:
				skip(e.key, "no info for device %s in this secret", e.device)
			case b == nil:
				skip(e.key, "the info of device %s was skipped", e.device)
			case attached[e.device] != "":
				skip(e.key, "%s already holds the %s of device %s", attached[e.device], what, e.device)
			default:
				attached[e.device] = e.key
				data := s.Data[e.key]
				if err := check(data); err != nil {
					skip(e.key, "%v", err)
				} else if len(data) > 0 {
					set(b, bytes.Clone(data))
				}
			}
		}
	}
	attach(caches, "cache", CacheKey, CheckCache, func(b *Bond, data []byte) { b.Cache = data })
	attach(inputs, "input capabilities", InputKey, CheckInput, func(b *Bond, data []byte) { b.Input = data })
	for device, b := range byDevice {
		if b != nil {
			bonds = append(bonds, sourced{*b, source[device]})
		}
	}
	sort.Slice(bonds, func(i, j int) bool { return bytes.Compare(bonds[i].Device[:], bonds[j].Device[:]) < 0 })
	return bonds
}

// DecodeSecrets reads the bonds of adapter out of several Secrets, one
// bond per device. When two Secrets hold the same device, the one named
// SecretName(adapter, device) wins, then one named the reference's
// per-bond way (SecretPrefix and the device), then the reference's older
// per-adapter Secret. Two Secrets of the same standing that hold
// different bytes for one device are a conflict nothing can settle:
// neither is used, and the error names both, so a planted copy never
// replaces the real one by the way its name sorts (byte-identical copies
// are one bond); a further copy of that standing is not used either, its
// error naming at most MaxConflictNames of the others and counting the
// rest. Each copy that loses is reported in skipped, as is everything
// DecodeSecret skips.
//
// At most MaxFetchedBonds bonds and MaxFetchedBytes bytes of them are
// held: past either bound a Secret's bond is skipped, naming the bound,
// and the bonds held so far are kept. At most MaxSkipped skips in
// MaxSkippedBytes are listed, over all the Secrets; the rest are counted
// in a *MoreSkipped that ends the list.
func DecodeSecrets(adapter bdaddr.Address, secrets []corev1.Secret) (bonds []Bond, skipped []error) {
	d := newDecoder(adapter)
	for i := range secrets {
		d.add(&secrets[i])
	}
	return d.result()
}

// Bounds on the bonds DecodeSecrets and Fetch hold at once. bondfetch
// runs in 64 MiB (deploy/bluetooth/operator.yaml); a bond is at most
// 1 MiB, the API server's limit on a Secret, so without a bound anyone
// who can write Secrets in the namespace could keep the pod from ever
// starting. A radio's real bonds are a few KiB each (315 and 714 bytes of
// info in the fixtures, caches of a few KiB), and BlueZ itself gives up
// well before 256 paired devices on one controller.
const (
	MaxFetchedBonds = 256
	MaxFetchedBytes = 8 << 20
)

// decoder accumulates DecodeSecrets over Secrets that arrive a page at a
// time, holding only the winning bond of each device.
type decoder struct {
	adapter  bdaddr.Address
	best     map[bdaddr.Address]candidate
	conflict map[bdaddr.Address]conflict // devices whose best copies disagree
	held     int                         // bytes of the bonds in best
	skips    skipList
}

type candidate struct {
	bond Bond
	name string // the Secret's
	key  string // the info's
	rank int
}

func (c candidate) size() int { return len(c.bond.Info) + len(c.bond.Cache) + len(c.bond.Input) }

func (c candidate) same(o candidate) bool {
	return bytes.Equal(c.bond.Info, o.bond.Info) && bytes.Equal(c.bond.Cache, o.bond.Cache)
}

func newDecoder(adapter bdaddr.Address) *decoder {
	return &decoder{adapter: adapter, best: map[bdaddr.Address]candidate{}, conflict: map[bdaddr.Address]conflict{}}
}

// rank orders the Secrets that may hold a device's bond: this package's
// name, the reference's per-bond name, anything else.
func (d *decoder) rank(name string, device bdaddr.Address) int {
	switch name {
	case SecretName(d.adapter, device):
		return 2
	case SecretPrefix + device.Key():
		return 1
	}
	return 0
}

func (d *decoder) add(s *corev1.Secret) {
	for _, b := range decodeSecret(d.adapter, s, &d.skips) {
		d.offer(s.Namespace, candidate{b.Bond, s.Name, b.key, d.rank(s.Name, b.Device)})
	}
}

func (d *decoder) offer(namespace string, c candidate) {
	device := c.bond.Device
	lose := func(loser candidate, format string, args ...any) {
		d.skips.add(namespace+"/"+loser.name, loser.key, format, args...)
	}
	if k, ok := d.conflict[device]; ok {
		if c.rank <= k.rank {
			lose(c, "device %s is held with different keys by this secret and secrets %s of the same standing: none of them is restored; delete the wrong ones",
				device, k)
			k.add(c.name)
			d.conflict[device] = k
			return
		}
		delete(d.conflict, device)
	}
	old, dup := d.best[device]
	switch {
	case dup && c.rank < old.rank:
		lose(c, "device %s is also in secret %s, which wins", device, old.name)
		return
	case dup && c.rank == old.rank && c.same(old):
		lose(c, "device %s is also in secret %s, with the same bytes", device, old.name)
		return
	case dup && c.rank == old.rank:
		k := conflict{rank: c.rank}
		k.add(old.name)
		k.add(c.name)
		d.conflict[device] = k
		d.drop(device)
		reason := fmt.Sprintf("device %s is held with different keys by secrets %s and %s of the same standing: neither is restored; delete the wrong one",
			device, old.name, c.name)
		lose(old, "%s", reason)
		lose(c, "%s", reason)
		return
	}
	held := d.held + c.size()
	if dup {
		held -= old.size()
	}
	if !dup && len(d.best) >= MaxFetchedBonds || held > MaxFetchedBytes {
		lose(c, "past the bound of %d bonds and %d bytes held at once (%d bonds, %d bytes held): not restored", MaxFetchedBonds, MaxFetchedBytes, len(d.best), d.held)
		return
	}
	if dup {
		lose(old, "device %s is also in secret %s, which wins", device, c.name)
	}
	d.best[device] = c
	d.held = held
}

func (d *decoder) drop(device bdaddr.Address) {
	if old, ok := d.best[device]; ok {
		d.held -= old.size()
		delete(d.best, device)
	}
}

func (d *decoder) result() ([]Bond, []error) {
	bonds := make([]Bond, 0, len(d.best))
	for _, c := range d.best {
		bonds = append(bonds, c.bond)
	}
	sortBonds(bonds)
	return bonds, d.skips.errors()
}

func sortBonds(bonds []Bond) {
	sort.Slice(bonds, func(i, j int) bool { return bytes.Compare(bonds[i].Device[:], bonds[j].Device[:]) < 0 })
}
