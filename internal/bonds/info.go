// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The key groups of a BlueZ info file (BlueZ src/device.c and src/adapter.c
// store and load them; doc/settings-storage.txt describes them).
const (
	// GroupLinkKey holds a BR/EDR link key: Key, Type, PINLength.
	GroupLinkKey = "LinkKey"
	// GroupLongTermKey holds the LE long term key used when this adapter is
	// the central: Key, Authenticated, EncSize, EDiv, Rand.
	GroupLongTermKey = "LongTermKey"
	// GroupPeripheralLongTermKey holds the LE long term key used when this
	// adapter is the peripheral, with the same keys.
	GroupPeripheralLongTermKey = "PeripheralLongTermKey"
	// GroupSlaveLongTermKey is GroupPeripheralLongTermKey's name in older
	// BlueZ releases. BlueZ still reads it when the new group is absent,
	// and a file that went through an upgrade holds both with the same key
	// (fixtures/bluez/ble-razer-basilisk/info).
	GroupSlaveLongTermKey = "SlaveLongTermKey"
	// GroupIdentityResolvingKey holds the device's IRK: Key.
	GroupIdentityResolvingKey = "IdentityResolvingKey"
	// GroupGeneral holds Name, Class, AddressType, SupportedTechnologies,
	// Trusted, Blocked, Services and the like.
	GroupGeneral = "General"
)

// Info is what a BlueZ info file says about a bond.
type Info struct {
	// Name is [General] Name, or "" when absent.
	Name string
	// AddressType is [General] AddressType: "public" or "static" for LE
	// devices; BR/EDR-only files have none, which BlueZ reads as public.
	AddressType string
	// Technologies is [General] SupportedTechnologies split on ';':
	// "BR/EDR", "LE".
	Technologies []string
	// LinkKey is the BR/EDR link key, or nil.
	LinkKey *LinkKey
	// LongTermKey is the LE key for this adapter as central, or nil.
	LongTermKey *LongTermKey
	// PeripheralLongTermKey is the LE key for this adapter as peripheral,
	// from [PeripheralLongTermKey], or from [SlaveLongTermKey] when the
	// new group is absent, as BlueZ loads it: one key even when the file
	// holds both groups.
	PeripheralLongTermKey *LongTermKey
	// IdentityResolvingKey is the device's IRK, or nil.
	IdentityResolvingKey *[16]byte
	// Trusted is [General] Trusted=true.
	Trusted bool
	// Vendor and Product are [DeviceID] Vendor and Product (decimal in
	// the file), 0 when absent.
	Vendor, Product uint16
}

// Keyless reports whether the file is a bond that holds no key: a
// DualShock 3 or Navigation controller set up over USB by BlueZ's
// sixaxis plugin (plugins/sixaxis.c), which stores the controller
// trusted, with its Device ID (Sony, vendor 0x054c; products 0x0268 and
// 0x042f), and no key, because those controllers connect over Bluetooth
// without one. Without this file bluetoothd refuses the controller, so
// it is written back and restored like any bond. Any other trusted file
// without a key (a device trusted but never bonded, a failed re-pair) is
// no bond.
func (i *Info) Keyless() bool {
	return !i.Bonded() && i.Trusted && i.Vendor == 0x054c && (i.Product == 0x0268 || i.Product == 0x042f)
}

// LinkKey is a [LinkKey] group.
type LinkKey struct {
	Key [16]byte
	// Type is the HCI link key type (0 combination key, 4 and 5
	// unauthenticated and authenticated P-192, 7 and 8 the P-256 ones).
	Type uint8
	// PINLength is the legacy PIN's length, 0 for Secure Simple Pairing.
	PINLength uint8
}

// LongTermKey is a [LongTermKey] or [PeripheralLongTermKey] group.
type LongTermKey struct {
	Key           [16]byte
	Authenticated uint8
	EncSize       uint8
	EDiv          uint16
	Rand          uint64
}

// Keys names the kinds of key the bond holds, in a fixed order, each once:
// "LinkKey", "LongTermKey", "PeripheralLongTermKey",
// "IdentityResolvingKey".
func (i *Info) Keys() []string {
	var k []string
	if i.LinkKey != nil {
		k = append(k, GroupLinkKey)
	}
	if i.LongTermKey != nil {
		k = append(k, GroupLongTermKey)
	}
	if i.PeripheralLongTermKey != nil {
		k = append(k, GroupPeripheralLongTermKey)
	}
	if i.IdentityResolvingKey != nil {
		k = append(k, GroupIdentityResolvingKey)
	}
	return k
}

// Bonded reports whether the file holds a key that encrypts a link: a
// link key or a long term key. A file with none describes a device BlueZ
// remembers without a bond.
func (i *Info) Bonded() bool {
	return i.LinkKey != nil || i.LongTermKey != nil || i.PeripheralLongTermKey != nil
}

// ParseInfo reads a BlueZ info file. It returns an error when the data is
// not a key file (see ParseKeyFile), holds no group, or has a key group
// that BlueZ would not load: a missing Key, a Key that is not 32 hex digits
// (BlueZ also takes a "0x" prefix), or a numeric field that is not a number
// of its size. Unknown groups and keys are allowed: BlueZ adds some with
// every release.
func ParseInfo(data []byte) (*Info, error) {
	f, err := ParseKeyFile(data)
	if err != nil {
		return nil, err
	}
	if len(f.Groups) == 0 {
		return nil, errors.New("info file holds no group")
	}
	info := &Info{}
	if g := f.Group(GroupGeneral); g != nil {
		if info.Name, err = g.String("Name"); err != nil {
			return nil, err
		}
		info.AddressType, _ = g.Get("AddressType")
		if t, ok := g.Get("Trusted"); ok {
			info.Trusted = strings.TrimSpace(t) == "true"
		}
		if t, ok := g.Get("SupportedTechnologies"); ok {
			for _, s := range strings.Split(t, ";") {
				if s = strings.TrimSpace(s); s != "" {
					info.Technologies = append(info.Technologies, s)
				}
			}
		}
	}
	if g := f.Group("DeviceID"); g != nil {
		v, _ := g.Get("Vendor")
		p, _ := g.Get("Product")
		vendor, err1 := strconv.ParseUint(strings.TrimSpace(v), 10, 16)
		product, err2 := strconv.ParseUint(strings.TrimSpace(p), 10, 16)
		if err1 == nil && err2 == nil {
			info.Vendor, info.Product = uint16(vendor), uint16(product)
		}
	}
	if g := f.Group(GroupLinkKey); g != nil {
		lk := &LinkKey{}
		if lk.Key, err = key128(g); err == nil {
			if lk.Type, err = uintField[uint8](g, "Type", 8); err == nil {
				lk.PINLength, err = uintField[uint8](g, "PINLength", 8)
			}
		}
		if err != nil {
			return nil, err
		}
		info.LinkKey = lk
	}
	if info.LongTermKey, err = longTermKey(f.Group(GroupLongTermKey)); err != nil {
		return nil, err
	}
	if info.PeripheralLongTermKey, err = longTermKey(f.Group(GroupPeripheralLongTermKey)); err != nil {
		return nil, err
	}
	// The old name is checked even when the new one wins, so that a
	// corrupt copy is not carried along unnoticed.
	legacy, err := longTermKey(f.Group(GroupSlaveLongTermKey))
	if err != nil {
		return nil, err
	}
	if info.PeripheralLongTermKey == nil {
		info.PeripheralLongTermKey = legacy
	}
	if g := f.Group(GroupIdentityResolvingKey); g != nil {
		k, err := key128(g)
		if err != nil {
			return nil, err
		}
		info.IdentityResolvingKey = &k
	}
	return info, nil
}

func longTermKey(g *Group) (*LongTermKey, error) {
	if g == nil {
		return nil, nil
	}
	var k LongTermKey
	var err error
	if k.Key, err = key128(g); err != nil {
		return nil, err
	}
	if k.Authenticated, err = uintField[uint8](g, "Authenticated", 8); err != nil {
		return nil, err
	}
	if k.EncSize, err = uintField[uint8](g, "EncSize", 8); err != nil {
		return nil, err
	}
	if k.EDiv, err = uintField[uint16](g, "EDiv", 16); err != nil {
		return nil, err
	}
	if k.Rand, err = uintField[uint64](g, "Rand", 64); err != nil {
		return nil, err
	}
	return &k, nil
}

// key128 reads a group's Key: 32 hex digits, most significant first as
// BlueZ prints them, optionally after "0x".
func key128(g *Group) ([16]byte, error) {
	var k [16]byte
	s, ok := g.Get("Key")
	if !ok {
		return k, fmt.Errorf("[%s] has no Key", g.Name)
	}
	s = strings.TrimPrefix(s, "0x")
	if len(s) != 32 {
		return k, fmt.Errorf("[%s] Key is %d characters, want 32 hex digits", g.Name, len(s))
	}
	if _, err := hex.Decode(k[:], []byte(s)); err != nil {
		return k, fmt.Errorf("[%s] Key: %w", g.Name, err)
	}
	return k, nil
}

// uintField reads an optional decimal field; BlueZ reads a missing one as
// 0.
func uintField[T uint8 | uint16 | uint64](g *Group, key string, bits int) (T, error) {
	s, ok := g.Get(key)
	if !ok {
		return 0, nil
	}
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, bits)
	if err != nil {
		return 0, fmt.Errorf("[%s] %s=%q is not a %d-bit number", g.Name, key, s, bits)
	}
	return T(v), nil
}
