// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteWirePlumberFragments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wireplumber.conf.d")
	paths, err := WriteWirePlumberFragments(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	vol, bt := filepath.Join(dir, VolumeFragment), filepath.Join(dir, BluetoothFragment)
	if len(paths) != 2 || paths[0] != vol || paths[1] != bt {
		t.Errorf("wrote %v", paths)
	}
	for path, want := range map[string][]byte{vol: VolumeConf(), bt: BluetoothConf()} {
		got, err := os.ReadFile(path)
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: %q, %v", path, got, err)
		}
		if fi, _ := os.Stat(path); fi == nil || fi.Mode() != 0o644 {
			t.Errorf("%s: mode %v", path, fi)
		}
	}
	// Without a media bus the Bluetooth fragment goes and the volume stays.
	paths, err = WriteWirePlumberFragments(dir, false)
	if err != nil || len(paths) != 1 || paths[0] != vol {
		t.Errorf("without a bus: %v, %v", paths, err)
	}
	if _, err := os.Stat(bt); !os.IsNotExist(err) {
		t.Errorf("stale Bluetooth fragment: %v", err)
	}
	if _, err := os.Stat(vol); err != nil {
		t.Error(err)
	}
	// A directory that cannot be made is an error naming it.
	blocker := filepath.Join(t.TempDir(), "f")
	os.WriteFile(blocker, nil, 0o644)
	if _, err := WriteWirePlumberFragments(filepath.Join(blocker, "d"), true); err == nil || !strings.Contains(err.Error(), blocker) {
		t.Errorf("under a file: %v", err)
	}
}

// The role is A2DP source, never sink; the live test shows WirePlumber
// registering only source endpoints with it.
func TestBluetoothConfRoles(t *testing.T) {
	text := string(BluetoothConf())
	for _, want := range []string{"bluez5.roles = [ a2dp_source ]", `bluez5.hfphsp-backend = "none"`,
		"bluetooth.use-persistent-storage = false", "bluetooth.autoswitch-to-headset-profile = false",
		"main-embedded = {", "monitor.bluez = required"} {
		if !strings.Contains(text, want) {
			t.Errorf("Bluetooth fragment lacks %q", want)
		}
	}
	if strings.Contains(text, "a2dp_sink") || strings.Contains(text, "hfp_") || strings.Contains(text, "hsp_") {
		t.Error("Bluetooth fragment names a sink or headset role")
	}
}

func TestWriteBakedFiles(t *testing.T) {
	root := t.TempDir()
	if err := WriteBakedFiles(root); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"wireplumber/wireplumber.conf.d/50-audio-operator.conf": "monitor.alsa = disabled",
		"wireplumber/wireplumber.conf.d/51-access-rules.conf":   `access = "flatpak"`,
		"pipewire/pipewire.conf.d/50-pipewire-access.conf":      `pipewire-0 = "unrestricted"`,
	}
	for _, f := range BakedFiles() {
		got, err := os.ReadFile(filepath.Join(root, f.Path))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(got), want[f.Path]) {
			t.Errorf("%s lacks %q", f.Path, want[f.Path])
		}
		delete(want, f.Path)
	}
	if len(want) != 0 {
		t.Errorf("not baked: %v", want)
	}
}
