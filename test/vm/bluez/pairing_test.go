// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package bluez

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	corev1 "k8s.io/api/core/v1"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/test/vm/guest"
)

// storage is bluetoothd's storage tree (compiled into BlueZ).
const storage = "/var/lib/bluetooth"

// agentPath is where the test's pairing agent is exported.
const agentPath = dbus.ObjectPath("/sh/liken/vmtest/agent")

// agent is a BlueZ pairing agent (org.bluez.Agent1) that accepts every
// request, as a person confirming "yes" would, and records what it was
// asked.
type agent struct {
	mu    sync.Mutex
	asked []string
}

func (a *agent) note(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, fmt.Sprintf(format, args...))
}

func (a *agent) calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

func (a *agent) Release() *dbus.Error { a.note("Release"); return nil }
func (a *agent) RequestPinCode(d dbus.ObjectPath) (string, *dbus.Error) {
	a.note("RequestPinCode %s", d)
	return "0000", nil
}
func (a *agent) DisplayPinCode(d dbus.ObjectPath, pin string) *dbus.Error {
	a.note("DisplayPinCode %s", d)
	return nil
}
func (a *agent) RequestPasskey(d dbus.ObjectPath) (uint32, *dbus.Error) {
	a.note("RequestPasskey %s", d)
	return 0, nil
}
func (a *agent) DisplayPasskey(d dbus.ObjectPath, passkey uint32, entered uint16) *dbus.Error {
	a.note("DisplayPasskey %s", d)
	return nil
}
func (a *agent) RequestConfirmation(d dbus.ObjectPath, passkey uint32) *dbus.Error {
	a.note("RequestConfirmation %s %06d", d, passkey)
	return nil
}
func (a *agent) RequestAuthorization(d dbus.ObjectPath) *dbus.Error {
	a.note("RequestAuthorization %s", d)
	return nil
}
func (a *agent) AuthorizeService(d dbus.ObjectPath, uuid string) *dbus.Error {
	a.note("AuthorizeService %s %s", d, uuid)
	return nil
}
func (a *agent) Cancel() *dbus.Error { a.note("Cancel"); return nil }

// The VM tier's Bluetooth test (test/vm), against btvirt's two virtual
// controllers and BlueZ 5.66:
//
//  1. the bluetoothd image's entrypoint starts dbus-daemon and bluetoothd,
//     which registers both controllers as adapters, powered, with the
//     addresses the kernel reports;
//  2. the first adapter discovers the second and pairs with it (Secure
//     Simple Pairing, confirmed by an agent), and bluetoothd writes the
//     bond on both sides;
//  3. the operator's bond store reads each adapter's bond, carries it
//     through the Secret encoding the operator writes and bondfetch
//     decodes, and writes it into a fresh tree, byte for byte;
//  4. bluetoothd restarted on the fresh tree still has both devices
//     paired.
func TestVMPairAndRestoreBonds(t *testing.T) {
	bv, err := guest.StartBtvirt(2)
	if err != nil {
		t.Fatal(err)
	}
	defer bv.Stop()
	addrs := controllerAddresses(t, bv)
	t.Logf("controllers %v: %s and %s", bv.Controllers, addrs[0], addrs[1])

	d := startBluetoothd(t)
	defer func() {
		if d != nil {
			d.stop()
		}
	}()
	paths := waitAdapters(t, d, addrs)
	t.Logf("bluetoothd registered %s", strings.Join([]string{string(paths[0]), string(paths[1])}, ", "))

	pair(t, d, bv.Controllers, paths, addrs)
	t.Logf("paired %s with %s", addrs[0], addrs[1])
	d.stop()
	d = nil

	// Both sides' bonds, as bluetoothd left them.
	var restored []bonds.Bond
	for i, a := range addrs {
		peer := addrs[1-i]
		got, skipped, err := bonds.ReadTree(storage, a)
		if err != nil || len(skipped) > 0 {
			t.Fatalf("ReadTree %s: %v %v", a, err, skipped)
		}
		if len(got) != 1 || got[0].Device != peer || !bytes.Contains(got[0].Info, []byte("[LinkKey]")) {
			t.Fatalf("ReadTree %s = %+v, want one bond with %s holding a link key", a, got, peer)
		}
		t.Logf("%s/%s/info:\n%s", a, peer, got[0].Info)
		// What the operator stores (Sync) and bondfetch reads back (Fetch).
		secret := bonds.EncodeSecret("liken-bluetooth", got[0])
		back, skipped := bonds.DecodeSecrets(a, []corev1.Secret{*secret})
		if len(back) != 1 || len(skipped) > 0 {
			t.Fatalf("the Secret %s decodes to %d bonds (%v)", secret.Name, len(back), skipped)
		}
		restored = append(restored, back...)
	}

	fresh := storage + ".restored"
	for _, b := range restored {
		report, err := bonds.WriteTree(fresh, b.Adapter, []bonds.Bond{b})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range report.Written {
			rel, _ := filepath.Rel(fresh, f)
			want, err := os.ReadFile(filepath.Join(storage, rel))
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(f); !bytes.Equal(got, want) {
				t.Errorf("%s: restored %d bytes differ from bluetoothd's %d", rel, len(got), len(want))
			}
		}
		t.Logf("restored %q", report.Written)
		if !containsSuffix(report.Written, filepath.Join(b.Adapter.String(), b.Device.String(), "info")) {
			t.Errorf("WriteTree wrote %q, no info for %s", report.Written, b.Device)
		}
	}
	if err := os.Rename(storage, storage+".paired"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fresh, storage); err != nil {
		t.Fatal(err)
	}

	d = startBluetoothd(t)
	waitAdapters(t, d, addrs)
	for i, a := range addrs {
		peer := addrs[1-i]
		dev := devicePath(paths[i], peer)
		if !waitObjects(d, 10*time.Second, func(o bluez.Objects) bool {
			for _, x := range o.Devices {
				if x.Path == dev && x.Paired {
					return true
				}
			}
			return false
		}) {
			t.Errorf("after the restart on the restored tree, %s is not a paired device of %s\n%s", peer, a, d.output())
			continue
		}
		t.Logf("after the restart on the restored tree, %s is a paired device of %s", peer, a)
	}
}

func containsSuffix(list []string, suffix string) bool {
	for _, s := range list {
		if strings.HasSuffix(s, suffix) {
			return true
		}
	}
	return false
}

// devicePath is BlueZ's object path of peer below adapter.
func devicePath(adapter dbus.ObjectPath, peer bdaddr.Address) dbus.ObjectPath {
	return dbus.ObjectPath(fmt.Sprintf("%s/dev_%s", adapter, strings.ReplaceAll(peer.String(), ":", "_")))
}

// waitObjects reads BlueZ's objects until cond holds or timeout passes.
func waitObjects(d *daemon, timeout time.Duration, cond func(bluez.Objects) bool) bool {
	return guest.WaitFor(timeout, func() bool {
		o, err := d.client.ManagedObjects(context.Background())
		return err == nil && cond(o)
	})
}

// controllerAddresses reads the public address of each of bv's
// controllers over the management interface, in bv.Controllers' order.
func controllerAddresses(t *testing.T, bv *guest.Btvirt) []bdaddr.Address {
	t.Helper()
	addrs := make([]bdaddr.Address, len(bv.Controllers))
	for i, id := range bv.Controllers {
		s, err := guest.MgmtAddress(id)
		if err != nil {
			t.Fatal(err)
		}
		if addrs[i], err = bdaddr.Parse(s); err != nil {
			t.Fatal(err)
		}
	}
	return addrs
}

// waitAdapters waits until bluetoothd has registered a powered adapter
// for each address and returns their object paths, in the same order.
func waitAdapters(t *testing.T, d *daemon, addrs []bdaddr.Address) []dbus.ObjectPath {
	t.Helper()
	paths := make([]dbus.ObjectPath, len(addrs))
	var last bluez.Objects
	ok := waitObjects(d, 15*time.Second, func(o bluez.Objects) bool {
		last = o
		for i, a := range addrs {
			paths[i] = ""
			for _, ad := range o.Adapters {
				if ad.Address == a.String() && ad.Powered {
					paths[i] = ad.Path
				}
			}
			if paths[i] == "" {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("bluetoothd has adapters %+v, want %v powered\n%s", last.Adapters, addrs, d.output())
	}
	return paths
}

// pair makes paths[1] discoverable, discovers it from paths[0] over BR/EDR
// and pairs with it, with the test's agent confirming, and waits until
// bluetoothd has written the link key on both sides. ids are the
// controllers' indexes and addrs their addresses.
func pair(t *testing.T, d *daemon, ids []uint16, paths []dbus.ObjectPath, addrs []bdaddr.Address) {
	t.Helper()
	conn, err := dbus.Connect(busAddress)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ag := &agent{}
	if err := conn.Export(ag, agentPath, "org.bluez.Agent1"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call := func(path dbus.ObjectPath, method string, args ...any) {
		t.Helper()
		if err := conn.Object("org.bluez", path).CallWithContext(ctx, method, 0, args...).Err; err != nil {
			t.Fatalf("%s %s: %v\n%s", path, method, err, d.output())
		}
	}
	set := func(path dbus.ObjectPath, prop string, v any) {
		t.Helper()
		call(path, "org.freedesktop.DBus.Properties.Set", "org.bluez.Adapter1", prop, dbus.MakeVariant(v))
	}
	call("/org/bluez", "org.bluez.AgentManager1.RegisterAgent", agentPath, "DisplayYesNo")
	call("/org/bluez", "org.bluez.AgentManager1.RequestDefaultAgent", agentPath)
	for i, p := range paths {
		// A fresh bluetoothd leaves page scan off. BlueZ 5.66 has no
		// Adapter1.Connectable to set (the operator's
		// bluez.Client.SetConnectable gets "No such property"), so the
		// kernel's management interface turns it on.
		if out, err := guest.Mgmt(ids[i], "connectable", "on"); err != nil {
			t.Fatal(err)
		} else {
			t.Logf("btmgmt --index %d connectable on: %s", ids[i], strings.TrimSpace(out))
		}
		set(p, "Pairable", true)
	}
	set(paths[1], "Discoverable", true)

	call(paths[0], "org.bluez.Adapter1.SetDiscoveryFilter", map[string]dbus.Variant{"Transport": dbus.MakeVariant("bredr")})
	call(paths[0], "org.bluez.Adapter1.StartDiscovery")
	dev := devicePath(paths[0], addrs[1])
	start := time.Now()
	if !waitObjects(d, 30*time.Second, func(o bluez.Objects) bool {
		for _, x := range o.Devices {
			if x.Path == dev {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("discovery from %s did not find %s within 30 s\n%s", paths[0], addrs[1], d.output())
	}
	t.Logf("discovery found %s in %s", dev, time.Since(start).Round(time.Millisecond))
	call(paths[0], "org.bluez.Adapter1.StopDiscovery")

	call(dev, "org.bluez.Device1.Pair")
	peerDev := devicePath(paths[1], addrs[0])
	if !waitObjects(d, 10*time.Second, func(o bluez.Objects) bool {
		paired := 0
		for _, x := range o.Devices {
			if (x.Path == dev || x.Path == peerDev) && x.Paired {
				paired++
			}
		}
		return paired == 2
	}) {
		t.Fatalf("after Pair, %s and %s are not both paired\n%s", dev, peerDev, d.output())
	}
	asked := ag.calls()
	t.Logf("the agent was asked: %q", asked)
	if !strings.Contains(strings.Join(asked, "\n"), "RequestConfirmation") {
		t.Errorf("the agent was never asked to confirm a passkey: %q", asked)
	}
	// bluetoothd writes a new bond's files as the pairing completes;
	// wait for both link keys before stopping it.
	for i, a := range addrs {
		info := filepath.Join(storage, a.String(), addrs[1-i].String(), "info")
		if !guest.WaitFor(30*time.Second, func() bool {
			data, err := os.ReadFile(info)
			return err == nil && bytes.Contains(data, []byte("[LinkKey]"))
		}) {
			t.Fatalf("bluetoothd wrote no link key to %s", info)
		}
	}
}
