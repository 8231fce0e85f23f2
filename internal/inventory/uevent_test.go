// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/uevent"
)

// The real kernel's datagrams: a network device's add (what a pod's veth
// makes) is not relevant, a platform device's is. Both are synthetic
// uevents, asked for by writing to the device's uevent file
// (Documentation/ABI/testing/sysfs-uevent), tagged with a UUID so that
// other uevents on the machine are told apart.
func TestRelevantOnKernelUevents(t *testing.T) {
	const platform = "/sys/devices/platform/pcspkr/uevent"
	if _, err := os.Stat(platform); err != nil {
		t.Fatalf("this machine's kernel has no %s to ask a platform uevent of: %v", platform, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := uevent.Listen(ctx, uevent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	uuid := func() string {
		b := make([]byte, 16)
		rand.Read(b)
		return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	}
	net, plat := uuid(), uuid()
	for _, w := range []struct{ path, uuid string }{{"/sys/class/net/lo/uevent", net}, {platform, plat}} {
		if err := os.WriteFile(w.path, []byte("add "+w.uuid), 0o200); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case ev := <-l.Events():
			switch ev.Env["SYNTH_UUID"] {
			case net:
				seen[net] = true
				if Relevant(ev) {
					t.Errorf("network device's %s %s (%s) is relevant", ev.Action, ev.DevPath, ev.Subsystem)
				}
			case plat:
				seen[plat] = true
				if !Relevant(ev) {
					t.Errorf("platform device's %s %s (%s) is not relevant", ev.Action, ev.DevPath, ev.Subsystem)
				}
			}
		case err := <-l.Errors():
			t.Logf("listener: %v", err)
		case <-ctx.Done():
			t.Fatalf("uevents seen: %v", seen)
		}
	}
}
