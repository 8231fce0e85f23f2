// SPDX-License-Identifier: Apache-2.0

package gate_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/liken-sh/operators/internal/audio/gate"
)

// A claim with a volume outside 0 to 100 or an unknown role is neither
// written nor read: the file is named in the error and left out.
func TestClaimVolumeAndRoleChecked(t *testing.T) {
	run := t.TempDir()
	loud := 101
	if err := gate.WriteClaim(run, gate.Claim{UID: uidA, Nodes: []string{nodeA}, Volume: &loud}); err == nil || !strings.Contains(err.Error(), "volume 101%") {
		t.Errorf("volume 101: %v", err)
	}
	if err := gate.WriteClaim(run, gate.Claim{UID: uidA, Nodes: []string{nodeA}, Role: "karaoke"}); err == nil || !strings.Contains(err.Error(), `"karaoke"`) {
		t.Errorf("role karaoke: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(run, gate.ClaimsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := `{"uid":"` + uidB + `","nodes":["` + nodeA + `"],"role":"karaoke"}`
	if err := os.WriteFile(filepath.Join(run, gate.ClaimsDir, uidB+".json"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	quiet := 0
	if err := gate.WriteClaim(run, gate.Claim{UID: uidA, Nodes: []string{nodeA}, Volume: &quiet, Role: gate.RoleMusic}); err != nil {
		t.Fatal(err)
	}
	claims, errs := gate.Claims(run)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), uidB) {
		t.Errorf("errors %v, want one naming %s", errs, uidB)
	}
	if c := claims[uidA]; c.Volume == nil || *c.Volume != 0 || c.Role != gate.RoleMusic || len(claims) != 1 {
		t.Errorf("claims %+v", claims)
	}
}

// The ducking file is written only when it changes, read back as
// written, and a value out of range is refused on either side.
func TestDuckingFile(t *testing.T) {
	run := t.TempDir()
	if got, err := gate.ReadDucking(run); err != nil || len(got) != 0 {
		t.Fatalf("no file: %v, %v", got, err)
	}
	want := map[string]int{nodeA: 12, nodeB: 0}
	for i, wrote := range []bool{true, false} {
		did, err := gate.WriteDucking(run, want)
		if err != nil || did != wrote {
			t.Fatalf("write %d: wrote %v (%v), want %v", i, did, err, wrote)
		}
	}
	got, err := gate.ReadDucking(run)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("read back (-want +got):\n%s", d)
	}
	if _, err := gate.WriteDucking(run, map[string]int{nodeA: 97}); err == nil || !strings.Contains(err.Error(), nodeA) {
		t.Errorf("97 dB: %v", err)
	}
	if err := os.WriteFile(filepath.Join(run, gate.DuckingFile), []byte(`{"x":-3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := gate.ReadDucking(run); err == nil || !strings.Contains(err.Error(), "-3 dB") {
		t.Errorf("-3 dB in the file: %v", err)
	}
	if g := gate.DuckGain(20); math.Abs(g-0.1) > 1e-12 {
		t.Errorf("20 dB is a gain of %v, want 0.1", g)
	}
}
