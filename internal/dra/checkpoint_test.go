// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

func TestCheckpointRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), CheckpointFile)
	cp, err := loadCheckpoint(path)
	if err != nil || len(cp.body.Claims) != 0 {
		t.Fatalf("missing file: %v, %d claims", err, len(cp.body.Claims))
	}
	rec := &claimRecord{Namespace: "ns", Name: "c", Phase: phaseCompleted, Devices: []preparedDevice{{
		Requests: []string{"r"}, Pool: "node", Device: "dev", CDIName: "uid-dev",
		Edits: cdispec.ContainerEdits{Env: []string{"A=b"}},
	}}}
	if err := cp.update(func(c map[types.UID]*claimRecord) { c["uid"] = rec }); err != nil {
		t.Fatal(err)
	}
	again, err := loadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	got := again.body.Claims["uid"]
	if got == nil || got.Devices[0].Edits.Env[0] != "A=b" || got.Phase != phaseCompleted {
		t.Fatalf("round trip lost data: %+v", got)
	}
}

func TestCheckpointCorrupt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, CheckpointFile)
	cp, _ := loadCheckpoint(path)
	if err := cp.update(func(c map[types.UID]*claimRecord) {
		c["uid"] = &claimRecord{Namespace: "ns", Name: "c", Phase: phaseCompleted}
	}); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	for name, data := range map[string]string{
		"truncated":        string(good[:len(good)/2]),
		"tampered":         strings.Replace(string(good), `"ns"`, `"xx"`, 1),
		"unknown version":  strings.Replace(string(good), checkpointVersion, "liken.sh/dra-checkpoint/v9", 1),
		"not json at all":  "\x00\x01garbage",
		"empty":            "",
		"checksum removed": strings.Replace(string(good), `"sha256:`, `"`, 1),
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadCheckpoint(path)
			if !errors.Is(err, errCorruptCheckpoint) {
				t.Fatalf("got %v, want a corrupt-checkpoint error", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestCheckpointFailedWriteKeepsState(t *testing.T) {
	dir := t.TempDir()
	cp, _ := loadCheckpoint(filepath.Join(dir, CheckpointFile))
	if err := cp.update(func(c map[types.UID]*claimRecord) { c["a"] = &claimRecord{Phase: phaseCompleted} }); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)
	if os.Geteuid() == 0 {
		// root ignores directory modes; make the write fail another way.
		cp.path = filepath.Join(dir, "missing-subdir", CheckpointFile)
	}
	err := cp.update(func(c map[types.UID]*claimRecord) { c["b"] = &claimRecord{Phase: phaseCompleted} })
	if err == nil {
		t.Fatal("write into an unwritable place succeeded")
	}
	if _, ok := cp.body.Claims["b"]; ok {
		t.Fatal("in-memory state changed although the file did not")
	}
	if _, ok := cp.body.Claims["a"]; !ok {
		t.Fatal("existing claim lost")
	}
}

// FuzzLoadCheckpoint: whatever is on disk, loading returns a state or an
// error, never panics.
func FuzzLoadCheckpoint(f *testing.F) {
	f.Add([]byte(`{"version":"liken.sh/dra-checkpoint/v1","checksum":"","body":{"claims":{}}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"body":{"claims":{"u":null}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), CheckpointFile)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cp, err := loadCheckpoint(path)
		if err == nil && cp.body.Claims == nil {
			t.Fatal("nil claims map")
		}
	})
}
