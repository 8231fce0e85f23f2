// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestPanickingPrepareFailsOnlyItsClaim(t *testing.T) {
	f := newFixture(t)
	f.driver.Stop()
	d, err := Start(f.ctx, f.opts, func(ctx context.Context, req DeviceRequest[testParams]) (ContainerEdits, error) {
		if req.Result.Device == "boom" {
			var m map[string]int
			m["x"] = 1 //nolint:staticcheck // a deliberate panic inside prepare
		}
		return ContainerEdits{Env: []string{"A=b"}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.driver = d
	bad := claim("bad", "bad", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "ok-1"), alloc("r2", testDriver, "boom")})
	good := claim("good", "good", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "dev-good")})
	res := f.prepare(bad, good)
	if err := res["bad"].Err; err == nil || !strings.Contains(err.Error(), "device boom: prepare panicked") {
		t.Fatalf("panicking device: %v", err)
	}
	if res["good"].Err != nil {
		t.Fatalf("the other claim: %v", res["good"].Err)
	}
	if _, ok := d.cp.body.Claims["bad"]; ok {
		t.Fatal("the panicked claim stayed in the checkpoint")
	}
}

// A newer driver may add fields inside the same checkpoint version; an
// older one rolled back to must still read it.
func TestCheckpointWithNewerFieldsStillReads(t *testing.T) {
	f := newFixture(t)
	if err := f.prepare(claim("a", "a", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "one")}))["a"].Err; err != nil {
		t.Fatal(err)
	}
	f.driver.Stop()
	path := filepath.Join(f.opts.PluginDir, CheckpointFile)
	var env map[string]json.RawMessage
	raw, _ := os.ReadFile(path)
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(env["body"], &body); err != nil {
		t.Fatal(err)
	}
	body["claims"].(map[string]any)["a"].(map[string]any)["podUIDs"] = []string{"p1"}
	body["futureField"] = 7
	bb, _ := json.Marshal(body)
	sum := sha256.Sum256(bb)
	out, _ := json.Marshal(map[string]any{"version": checkpointVersion, "checksum": "sha256:" + hex.EncodeToString(sum[:]), "body": json.RawMessage(bb)})
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	f.start()
	if moved, _ := filepath.Glob(path + ".corrupt-*"); len(moved) != 0 {
		t.Fatal("a checkpoint with added fields was treated as corrupt")
	}
	if rec := f.driver.cp.body.Claims["a"]; rec == nil || rec.Phase != phaseCompleted {
		t.Fatal("claim lost")
	}
}

func TestHostileUIDsTouchNoFile(t *testing.T) {
	f := newFixture(t)
	other := filepath.Join(f.opts.CDIDir, "nvidia.com-gpu.json")
	if err := os.WriteFile(other, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	res := f.unprepare("/../nvidia.com-gpu", "/../../plugin/checkpoint", "..", "")
	for uid, err := range res {
		if err == nil || !strings.Contains(err.Error(), "is not a UID") {
			t.Errorf("unprepare %q: %v", uid, err)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("another vendor's spec: %v", err)
	}
	c := claim("../x", "x", []resourceapi.DeviceRequestAllocationResult{alloc("r", testDriver, "one")})
	if err := f.prepare(c)["../x"].Err; err == nil {
		t.Fatal("prepared a claim whose UID is a path")
	}
}

func TestTwoSharesOfOneDeviceInOneClaim(t *testing.T) {
	f := newFixture(t)
	s1, s2 := types.UID("share-1"), types.UID("share-2")
	c := claim("c", "c", []resourceapi.DeviceRequestAllocationResult{
		{Request: "a", Driver: testDriver, Pool: "node-1", Device: "speaker", ShareID: &s1},
		{Request: "b", Driver: testDriver, Pool: "node-1", Device: "speaker", ShareID: &s2}})
	res := f.prepare(c)["c"]
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if a, b := res.Devices[0].CDIDeviceIDs[0], res.Devices[1].CDIDeviceIDs[0]; a == b {
		t.Fatalf("both shares got CDI device %s", a)
	}
}

func TestSetDevicesRefusesWhatTheAPIServerWould(t *testing.T) {
	f := newFixture(t)
	long := strings.Repeat("x", 65)
	many := Attributes{}
	for i := range 33 {
		many[resourceapiName("a", i)] = Int(1)
	}
	for name, dev := range map[string]Device{
		"upper-case name": {Name: "Pad-Green"},
		"slash in name":   {Name: "a/b"},
		"64-byte name":    {Name: strings.Repeat("a", 64)},
		"taint key":       {Name: "a", Taints: []Taint{{Key: "not a key!", Effect: TaintNoSchedule}}},
		"taint value":     {Name: "a", Taints: []Taint{{Key: "x.liken.sh/k", Value: "has space", Effect: TaintNoSchedule}}},
		"33 attributes":   {Name: "a", Attributes: many},
		"attribute name":  {Name: "a", Attributes: Attributes{"Bad Name!": String("x")}},
		"no value":        {Name: "a", Attributes: Attributes{"empty": {}}},
		"long string":     {Name: "a", Attributes: Attributes{"s": String(long)}},
		"domain not DNS":  {Name: "a", Attributes: Attributes{"Bad_Domain/x": String("x")}},
	} {
		err := f.driver.SetDevices([]Device{{Name: "fine"}, dev})
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := Device{Name: "pad-1", Attributes: Attributes{"color": String("blue"), "sound.liken.sh/supportsSound": Bool(true)},
		Taints: []Taint{{Key: "x.liken.sh/gone", Effect: TaintNoExecute}}}
	if err := f.driver.SetDevices([]Device{ok}); err != nil {
		t.Fatalf("a valid device refused: %v", err)
	}
}

func resourceapiName(prefix string, i int) resourceapi.QualifiedName {
	return resourceapi.QualifiedName(prefix + strings.Repeat("b", i%5) + string(rune('a'+i%26)) + string(rune('a'+i/26)))
}
