// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/google/go-cmp/cmp"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/dra"
)

// A volume outside 0 to 100 and a role not among the roles are refused,
// naming what was wrong; a long role is not repeated whole.
func TestVolumeAndRoleParametersValidated(t *testing.T) {
	n := func(v int) *int { return &v }
	for _, c := range []struct {
		p    Params
		want string // "" for valid
	}{
		{Params{Volume: n(0), Role: "announcement"}, ""},
		{Params{Volume: n(100), Role: "music"}, ""},
		{Params{}, ""},
		{Params{Volume: n(101)}, "volume 101 is outside 0 to 100"},
		{Params{Volume: n(-1)}, "volume -1 is outside 0 to 100"},
		{Params{Role: "Music"}, `role "Music" is not one of announcement, communication, game, movie, music, notification`},
		{Params{Role: strings.Repeat("r", 10240)}, "is not one of"},
	} {
		err := c.p.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.p, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || len(err.Error()) > 200):
			t.Errorf("%+v: %v, want an error with %q", c.p, err, c.want)
		}
	}
}

// Prepare writes the claim's volume and role into its claim file, for
// the gate, and stamps the role's media.role on the consumer's streams
// through PIPEWIRE_PROPS.
func TestPrepareCarriesVolumeAndRole(t *testing.T) {
	run := t.TempDir()
	const uid = "5a1b7c2e-0000-4000-8000-00000000000a"
	if err := os.MkdirAll(gate.SocketDir(run, uid), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", gate.SocketPath(run, uid)) // the gate's socket, served
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lookup := func(dev string) (string, bool, bool) { return "liken.audio." + dev, true, true }
	result := resourceapi.DeviceRequestAllocationResult{Driver: DriverName, Device: "a"}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
	vol := 35
	edits, err := Prepare(lookup, run, 5*time.Second)(t.Context(), dra.DeviceRequest[Params]{
		Claim: claim, Result: result, Params: Params{Volume: &vol, Role: gate.RoleAnnouncement}})
	if err != nil {
		t.Fatal(err)
	}
	claims, errs := gate.Claims(run)
	if got := claims[uid]; len(errs) != 0 || got.Volume == nil || *got.Volume != 35 || got.Role != gate.RoleAnnouncement {
		t.Errorf("claim file %+v (%v), want volume 35 and role announcement", got, errs)
	}
	if !slices.Contains(edits.Env, "PIPEWIRE_PROPS={ media.role = Announcement }") {
		t.Errorf("env %q stamps no media.role", edits.Env)
	}
}

// Each Sink's spec.duckDecibels reaches the claim gate's file by its
// node.name, 20 dB when absent; the file is written again only when a
// ducking changes.
func TestSinksDuckingHandedToTheGate(t *testing.T) {
	run := t.TempDir()
	o := &operator{}
	o.cfg.Remote.RuntimeDir = run
	six := int32(6)
	o.noteDucking("liken.audio.card0-pcm3", audiov1.SinkSpec{DuckDecibels: &six})
	o.noteDucking("bluez_output.00_11_22_33_44_55.1", audiov1.SinkSpec{})
	o.noteDucking("", audiov1.SinkSpec{DuckDecibels: &six}) // no node: nothing
	o.writeDucking(klog.Background())
	got, err := gate.ReadDucking(run)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"liken.audio.card0-pcm3": 6, "bluez_output.00_11_22_33_44_55.1": gate.DefaultDuckDecibels}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ducking file (-want +got):\n%s", d)
	}
	huge := int32(500)
	if d := DuckDecibels(audiov1.SinkSpec{DuckDecibels: &huge}); d != gate.MaxDuckDecibels {
		t.Errorf("500 dB held to %d, want %d", d, gate.MaxDuckDecibels)
	}
}
