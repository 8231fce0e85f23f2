// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/internal/relayd"
	"github.com/liken-sh/operators/test/fixtures"
)

// The bound a bond's Input is checked against is the one the input relay
// puts on a snapshot, so a bond the operator keeps is one the relay takes.
func TestInputDeviceBoundsAgree(t *testing.T) {
	if bonds.MaxInputDevices != relayd.MaxDevices {
		t.Errorf("bonds.MaxInputDevices = %d, relayd.MaxDevices = %d", bonds.MaxInputDevices, relayd.MaxDevices)
	}
}

// A snapshot the relay refuses (here the first controller's, as a relay
// whose state is full would) does not keep the controllers after it from
// being given theirs, and the adapter is seeded again at the next
// write-back, when the relay may take it.
func TestSeedRelayPastARefusal(t *testing.T) {
	adapter := bdaddr.MustParse("00:1A:7D:DA:71:13")
	first, second := bdaddr.MustParse("C0:FF:EE:00:00:01"), bdaddr.MustParse("C0:FF:EE:00:00:02")
	input := []byte(`[{"name":"Wireless Controller","id":{"bus":5,"vendor":1356,"product":2508,"version":33024},"key":[304,305]}]`)
	info := fixtures.BlueZ(t, "8bitdo-nes30-pro.info")
	client := fake.NewClientset()
	for _, device := range []bdaddr.Address{first, second} {
		s := bonds.EncodeSecret("ns", bonds.Bond{Adapter: adapter, Device: device, Info: info, Input: input})
		if _, err := client.CoreV1().Secrets("ns").Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var seeded []string
	refuse := first.String()
	mux := http.NewServeMux()
	mux.HandleFunc("PUT "+relayd.SnapshotsPath+"{address}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if a := r.PathValue("address"); a == refuse {
			http.Error(w, "relay state: over the bound", http.StatusInternalServerError)
		} else {
			seeded = append(seeded, a)
			w.WriteHeader(http.StatusNoContent)
		}
	})
	socket := filepath.Join(t.TempDir(), "relay.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()

	o := &operator{cfg: Config{Namespace: "ns", KubeClient: client, Relay: NewInputRelay(socket, "/dev")}, seeded: map[bdaddr.Address]bool{}}
	o.seedRelay(context.Background(), adapter)
	mu.Lock()
	got := slices.Clone(seeded)
	refuse = ""
	mu.Unlock()
	if !slices.Equal(got, []string{second.String()}) {
		t.Errorf("seeded %v after refusing %s, want %s", got, first, second)
	}
	if o.seeded[adapter] {
		t.Fatal("the adapter counts as seeded though a controller's snapshot was refused")
	}
	o.seedRelay(context.Background(), adapter)
	if !o.seeded[adapter] || !slices.Contains(seeded, first.String()) {
		t.Errorf("seeded %v, adapter seeded %v; want %s given at the second try", seeded, o.seeded[adapter], first)
	}
}
