// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package hci

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/liken-sh/operators/test/vm/guest"
)

// The VM tier's test (test/vm): HCIGETDEVINFO through the real socket on
// two controllers btvirt registers with a real kernel. Each address must be
// what the kernel's management interface reports for the same index
// (btmgmt), and an index with no controller must be ErrNoDevice.
func TestVMResolverOnBtvirt(t *testing.T) {
	bv, err := guest.StartBtvirt(2)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := bv.Stop(); err != nil {
			t.Error(err)
		}
	}()
	sock, err := OpenSocket()
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	r := Resolver{Kernel: sock, Timeout: 20 * time.Second}
	seen := map[string]bool{}
	for _, id := range bv.Controllers {
		a, err := r.Index(context.Background(), id)
		if err != nil {
			t.Fatalf("hci%d: %v", id, err)
		}
		mgmt, err := guest.MgmtAddress(id)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("hci%d: HCIGETDEVINFO %s (flags %#x, bus %d), btmgmt %s", id, a.Info.Address, a.Info.Flags, a.Info.Bus(), mgmt)
		if a.Info.ID != id || a.Info.Address.String() != mgmt || a.Info.Bus() != 0 {
			t.Errorf("hci%d: HCIGETDEVINFO says id %d address %s bus %d; the management interface says %s on a virtual bus (0)",
				id, a.Info.ID, a.Info.Address, a.Info.Bus(), mgmt)
		}
		seen[mgmt] = true
	}
	if len(seen) != len(bv.Controllers) {
		t.Errorf("the controllers share addresses: %v", seen)
	}
	if _, err := sock.DevInfo(bv.Controllers[len(bv.Controllers)-1] + 5); !errors.Is(err, ErrNoDevice) {
		t.Errorf("DevInfo of an index with no controller = %v, want ErrNoDevice", err)
	}
}
