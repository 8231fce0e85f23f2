// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/liken-sh/operators/internal/alsa/eld"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pipewire"
)

// TestCodecsAttributeFromELD: an HDMI/DP output publishes the compressed
// formats its monitor's ELD lists, and none when it lists PCM alone.
func TestCodecsAttributeFromELD(t *testing.T) {
	eps, _ := Endpoints("kitchen", xpsCards(t))
	var dp *Endpoint
	for i := range eps {
		if eps[i].Name == "kitchen-pci-0000-00-1f-3-hdmi-3" {
			dp = &eps[i]
		}
	}
	if dp == nil || dp.PCM.ELD.ELD == nil {
		t.Fatal("the recorded DP output has no monitor")
	}
	if _, ok := device(*dp, true).Attributes["codecs"]; ok {
		t.Error("the Samsung monitor, which lists LPCM alone, has a codecs attribute")
	}
	text, err := os.ReadFile("../../testdata/fixtures/eld/forum-intel-h97-onkyo-txnr828-eld0.0.txt")
	if err != nil {
		t.Fatal(err)
	}
	p, err := eld.ParseProc(text)
	if err != nil {
		t.Fatal(err)
	}
	dp.PCM.ELD.ELD = p.ELD
	v := device(*dp, true).Attributes["codecs"].StringValue
	if v == nil || *v != "ac3 dts eac3 dts_hd truehd" {
		t.Errorf("the Onkyo receiver's codecs attribute %v, want every passthrough name", v)
	}
}

func TestCodecListValidated(t *testing.T) {
	for codec, want := range map[string]string{
		"ac3  eac3":                        `"ac3  eac3" is not a codec name or a list of them`,
		" ac3":                             "is not a codec name",
		"ac3 ac3":                          "names ac3 twice",
		"AC3":                              `"AC3" is not a codec name`,
		strings.Repeat("ac3 ", 17) + "ac3": "71 bytes of text",
	} {
		if err := (&Params{Codec: codec}).Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("codec %q: %v, want %q", codec, err, want)
		}
	}
	if err := (&Params{Codec: "eac3 ac3 dts_hd"}).Validate(); err != nil {
		t.Errorf("a list of three: %v", err)
	}
}

// passthroughClaim is a claim of output "hdmi" (request "tv") holding
// streams of its capacity (0: allocated without consumed capacity, so
// alone), its codec parameter codec.
func passthroughClaim(uid, codec string, streams int) dra.DeviceRequest[Params] {
	r := resourceapi.DeviceRequestAllocationResult{Request: "tv", Driver: DriverName, Pool: "kitchen", Device: "hdmi"}
	if streams > 0 {
		r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{CapacityStreams: *resource.NewQuantity(int64(streams), resource.DecimalSI)}
	}
	raw := []byte(`{"codec":"` + codec + `"}`)
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "film", UID: types.UID("5e0b8a3c-0000-4000-8000-0000000000" + uid)},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{r},
			Config: []resourceapi.DeviceAllocationConfiguration{{Source: resourceapi.AllocationConfigSourceClaim, Requests: []string{"tv"},
				DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: DriverName, Parameters: runtime.RawExtension{Raw: raw}}}}},
		}}},
	}
	return dra.DeviceRequest[Params]{Claim: claim, Result: r, Params: Params{Codec: codec}}
}

// TestPreparePassthrough: what prepare refuses of a codec on an HDMI
// output (a format the ELD does not list, any format on a monitor of PCM
// alone, a share of the output), and what a claim holding it whole gets:
// its claim file records the codecs in PipeWire's names by node, and
// the node is asked to take them before the consumer's socket is handed
// over.
func TestPreparePassthrough(t *testing.T) {
	lookup := func(dev string) (string, bool, bool) {
		return "liken.audio." + dev, true, dev == "hdmi" || dev == "tv"
	}
	dir := t.TempDir()
	codecs := &fakeCodecs{}
	prep := PrepareWithCodecs(lookup, codecs, nil, dir, 5*time.Second)
	for name, tc := range map[string]struct {
		req  dra.DeviceRequest[Params]
		want []string
	}{
		"not listed": {passthroughClaim("01", "ac3 eac3", 16), []string{`output hdmi cannot pass codec "eac3" through`, "its monitor's ELD lists ac3, dts"}},
		"a share":    {passthroughClaim("02", "dts", 4), []string{"cannot be mixed", "request all 16 streams", `capacity.requests.streams: "16"`, "this one holds 4"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := prep(t.Context(), tc.req)
			if err == nil || !containsAll(err.Error(), tc.want...) {
				t.Fatalf("prepare: %v, want %q", err, tc.want)
			}
		})
	}
	tv := passthroughClaim("03", "ac3", 16)
	tv.Result.Device = "tv"
	tv.Claim.Status.Allocation.Devices.Results[0].Device = "tv"
	if _, err := prep(t.Context(), tv); err == nil || !strings.Contains(err.Error(), "its monitor's ELD lists no compressed format") {
		t.Fatalf("a monitor of PCM alone: %v", err)
	}
	if len(codecs.switched) != 0 {
		t.Fatalf("refused claims set codecs: %v", codecs.switched)
	}

	// Held whole: allocated alone (no consumed capacity), and all 16.
	for _, req := range []dra.DeviceRequest[Params]{passthroughClaim("04", "dts ac3", 0), passthroughClaim("05", "dts ac3", 16)} {
		uid := string(req.Claim.UID)
		if err := os.MkdirAll(gate.SocketDir(dir, uid), 0o755); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("unix", gate.SocketPath(dir, uid))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, err := prep(t.Context(), req); err != nil {
			t.Fatalf("claim %s: %v", uid, err)
		}
		files, errs := gate.Claims(dir)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		want := map[string][]string{"liken.audio.hdmi": {pipewire.IEC958DTS, pipewire.IEC958AC3}}
		if diff := cmp.Diff(want, files[uid].Passthrough); diff != "" {
			t.Errorf("claim %s file's passthrough (-want +got):\n%s", uid, diff)
		}
	}
	if diff := cmp.Diff([]string{"hdmi=DTS,AC3", "hdmi=DTS,AC3"}, codecs.switched); diff != "" {
		t.Errorf("codecs set (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(dir, gate.ClaimsDir)); err != nil {
		t.Fatal(err)
	}
}

// TestSyncPassthrough: a pass sets each node that takes IEC 958 codecs to
// what the claim files name for it, PCM alone for the rest, and leaves a
// node that takes none, or already shows them, alone.
func TestSyncPassthrough(t *testing.T) {
	var writes []string
	o := &operator{iec958Writes: map[string]iec958Write{}}
	o.cfg.SetIEC958Codecs = func(_ context.Context, node uint32, codecs []string) error {
		writes = append(writes, fmt.Sprintf("%d=%v", node, codecs))
		return nil
	}
	decl := &pipewire.Declared{}
	g := &pipewire.Graph{Nodes: []pipewire.Node{
		{ID: 40, Name: "receiver", Declared: decl, IEC958Codecs: []string{"PCM"}},
		{ID: 41, Name: "tv", Declared: decl, IEC958Codecs: []string{"PCM", "AC3"}},
		{ID: 42, Name: "shown", Declared: decl, IEC958Codecs: []string{"PCM", "DTS"}},
		{ID: 43, Name: "analog", Declared: decl},
		{ID: 44, Name: "stream", IEC958Codecs: []string{"PCM"}},
	}}
	files := map[string]gate.Claim{
		"a": {UID: "a", Nodes: []string{"receiver"}, Passthrough: map[string][]string{"receiver": {"EAC3", "AC3"}}},
		"b": {UID: "b", Nodes: []string{"shown", "analog"}, Passthrough: map[string][]string{"shown": {"DTS"}, "analog": {"AC3"}}},
	}
	o.syncPassthrough(t.Context(), g, files)
	if diff := cmp.Diff([]string{"40=[EAC3 AC3]", "41=[]"}, writes); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	// The same pass again writes nothing while the writes are recent; no
	// claim files read writes nothing at all.
	o.syncPassthrough(t.Context(), g, files)
	o.syncPassthrough(t.Context(), g, nil)
	if len(writes) != 2 {
		t.Errorf("writes %v, want the first two alone", writes)
	}
}
