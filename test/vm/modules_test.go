// SPDX-License-Identifier: Apache-2.0

package vm

import (
	"slices"
	"strings"
	"testing"
)

// A cut of the 6.12 backports kernel's modules.dep and modules.builtin.
const (
	sampleDep = `kernel/sound/soundcore.ko.xz:
kernel/sound/core/snd.ko.xz: kernel/sound/soundcore.ko.xz
kernel/sound/core/snd-timer.ko.xz: kernel/sound/core/snd.ko.xz kernel/sound/soundcore.ko.xz
kernel/sound/core/snd-pcm.ko.xz: kernel/sound/core/snd-timer.ko.xz kernel/sound/core/snd.ko.xz kernel/sound/soundcore.ko.xz
kernel/sound/drivers/snd-dummy.ko.xz: kernel/sound/core/snd-pcm.ko.xz kernel/sound/core/snd-timer.ko.xz kernel/sound/core/snd.ko.xz kernel/sound/soundcore.ko.xz
kernel/drivers/hid/hid.ko.xz:
kernel/drivers/hid/uhid.ko.xz: kernel/drivers/hid/hid.ko.xz
`
	sampleBuiltin = "kernel/crypto/ecb.ko\nkernel/drivers/virtio/virtio_pci.ko\n"
)

func TestClosure(t *testing.T) {
	m, err := ParseModulesDep(strings.NewReader(sampleDep), strings.NewReader(sampleBuiltin))
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Closure([]string{"snd-dummy", "uhid", "ecb", "virtio-pci", "snd_pcm"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"kernel/drivers/hid/hid.ko.xz", "kernel/drivers/hid/uhid.ko.xz",
		"kernel/sound/core/snd-pcm.ko.xz", "kernel/sound/core/snd-timer.ko.xz", "kernel/sound/core/snd.ko.xz",
		"kernel/sound/drivers/snd-dummy.ko.xz", "kernel/sound/soundcore.ko.xz",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Closure = %q\nwant %q", got, want)
	}
	if _, err := m.Closure([]string{"snd-dumy"}); err == nil || !strings.Contains(err.Error(), "snd-dumy") {
		t.Errorf("Closure of an unknown module = %v; want an error naming it", err)
	}
}

func TestParseModulesDepRefusesGarbage(t *testing.T) {
	if _, err := ParseModulesDep(strings.NewReader("kernel/a.ko\n"), nil); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("ParseModulesDep without a colon = %v; want an error naming line 1", err)
	}
}

func TestModuleName(t *testing.T) {
	for in, want := range map[string]string{
		"kernel/sound/pci/hda/snd-hda-intel.ko.xz": "snd_hda_intel",
		"snd-hda-intel":        "snd_hda_intel",
		"kernel/crypto/ecb.ko": "ecb",
		"9pnet_virtio.ko.zst":  "9pnet_virtio",
	} {
		if got := ModuleName(in); got != want {
			t.Errorf("ModuleName(%q) = %q, want %q", in, got, want)
		}
	}
}
