// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/fakesys"
)

// xpsHardware is the recorded XPS 17 as declare sees a node: a /dev/snd
// with its nodes, recorded control interfaces behind them, and sysfs.
func xpsHardware(t *testing.T) Hardware {
	t.Helper()
	root := t.TempDir()
	manifest, err := os.ReadFile("../alsa/testdata/sysfs/xps9700.tree")
	if err != nil {
		t.Fatal(err)
	}
	if err := fakesys.BuildTree(manifest, filepath.Join(root, "sys")); err != nil {
		t.Fatal(err)
	}
	var dumps []*alsa.Dump
	for card := range 3 {
		data, err := os.ReadFile(fmt.Sprintf("../alsa/testdata/xps9700/card%d.json", card))
		if err != nil {
			t.Fatal(err)
		}
		d, err := alsa.DecodeDump(data)
		if err != nil {
			t.Fatal(err)
		}
		dumps = append(dumps, d)
	}
	if err := alsa.WriteDevSnd(filepath.Join(root, "snd"), dumps...); err != nil {
		t.Fatal(err)
	}
	return Hardware{DevSnd: filepath.Join(root, "snd"), Sysfs: filepath.Join(root, "sys"), Opener: alsa.NewDumpDir("../alsa/testdata/xps9700")}
}

func TestDeclareEveryPlaybackPCM(t *testing.T) {
	dir := t.TempDir()
	cfg := DeclareConfig{Hardware: xpsHardware(t), Node: "study", PipeWireDir: filepath.Join(dir, "pw"), WirePlumberDir: filepath.Join(dir, "wp")}
	res, err := Declare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 0 {
		t.Fatalf("problems: %v", res.Problems)
	}
	outs, err := pipewire.ReadDeclaration(res.Declaration)
	if err != nil {
		t.Fatal(err)
	}
	byOutput := map[string]pipewire.Output{}
	for _, o := range outs {
		byOutput[o.Output] = o
	}
	if len(outs) != len(res.Endpoints) || len(outs) < 7 {
		t.Fatalf("%d declarations for %d endpoints", len(outs), len(res.Endpoints))
	}
	// HDMI outputs with no monitor are declared too.
	for _, name := range []string{"study-pci-0000-00-1f-3-hdmi-1", "study-pci-0000-00-1f-3-hdmi-2", "study-pci-0000-00-1f-3-hdmi-3"} {
		o, ok := byOutput[name]
		if !ok {
			t.Errorf("%s not declared", name)
			continue
		}
		if o.ALSAPath() != fmt.Sprintf("hw:0,%d", o.Device) {
			t.Errorf("%s: path %s", name, o.ALSAPath())
		}
	}
	// The Samsung's ELD says 2ch LPCM: a stereo layout; the Razer's
	// channel map says FL FR.
	if o := byOutput["study-pci-0000-00-1f-3-hdmi-3"]; o.Channels != 2 || !slices.Equal(o.Positions, []string{"FL", "FR"}) {
		t.Errorf("DP output layout %d %v", o.Channels, o.Positions)
	}
	if o := byOutput["study-usb-1532-0526-00000000-usb-audio"]; !slices.Equal(o.Positions, []string{"FL", "FR"}) {
		t.Errorf("USB headset layout %v", o.Positions)
	}
	// Without a media bus, no Bluetooth fragment.
	if _, err := os.Stat(filepath.Join(dir, "wp", pipewire.BluetoothFragment)); !os.IsNotExist(err) {
		t.Errorf("Bluetooth fragment without a bus: %v", err)
	}
	cfg.MediaBus = true
	if _, err := Declare(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "wp", pipewire.BluetoothFragment)); err != nil {
		t.Errorf("no Bluetooth fragment with a bus: %v", err)
	}
}

func TestDeclareWithoutCards(t *testing.T) {
	dir := t.TempDir()
	res, err := Declare(DeclareConfig{Hardware: Hardware{DevSnd: filepath.Join(dir, "missing")}, Node: "n",
		PipeWireDir: filepath.Join(dir, "pw"), WirePlumberDir: filepath.Join(dir, "wp")})
	if err != nil {
		t.Fatalf("a claim with no cards: %v", err)
	}
	if outs, err := pipewire.ReadDeclaration(res.Declaration); err != nil || len(outs) != 0 {
		t.Fatalf("declaration %v, %v", outs, err)
	}
}

func TestDeclareUnwritable(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o600)
	_, err := Declare(DeclareConfig{Hardware: xpsHardware(t), Node: "n", PipeWireDir: filepath.Join(blocker, "pw"), WirePlumberDir: filepath.Join(dir, "wp")})
	if err == nil {
		t.Fatal("declared into a path under a file")
	}
}

func TestDeclareFailingLeavesTheDeclarationAlone(t *testing.T) {
	dir := t.TempDir()
	hw := xpsHardware(t)
	pw := filepath.Join(dir, "pw")
	if _, err := Declare(DeclareConfig{Hardware: hw, Node: "n", PipeWireDir: pw, WirePlumberDir: filepath.Join(dir, "wp")}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(pw, pipewire.DeclarationFile))
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o600)
	if _, err := Declare(DeclareConfig{Hardware: Hardware{DevSnd: filepath.Join(dir, "none")}, Node: "n", PipeWireDir: pw, WirePlumberDir: filepath.Join(blocker, "wp")}); err == nil {
		t.Fatal("declared with an unwritable WirePlumber directory")
	}
	after, _ := os.ReadFile(filepath.Join(pw, pipewire.DeclarationFile))
	if string(before) != string(after) {
		t.Fatal("a failed declare replaced the declaration")
	}
}

func TestSpecLayoutPastTheSchemaIsIgnored(t *testing.T) {
	for _, bad := range [][]string{
		{"FL", "FL"}, {"fl", "FR"}, {"FL", "F R"}, {"FL,FR"}, make([]string, 65),
	} {
		if ValidSpecLayout(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
	if !ValidSpecLayout([]string{"FL", "FR", "RL", "RR", "FC", "LFE", "AUX63"}) || !ValidSpecLayout([]string{"FL", "FR", "NA", "NA"}) {
		t.Error("a 5.1 layout with an AUX channel, or unused NA channels, refused")
	}
}

func TestDeclareTakesSinkLayoutsAndFallsBack(t *testing.T) {
	six := []string{"FL", "FR", "RL", "RR", "FC", "LFE"}
	jack := "study-pci-0000-00-1f-3-jack-out"
	declare := func(layouts func([]string) (map[string][]string, error)) (DeclareResult, map[string]pipewire.Output) {
		t.Helper()
		dir := t.TempDir()
		res, err := Declare(DeclareConfig{Hardware: xpsHardware(t), Node: "study", PipeWireDir: filepath.Join(dir, "pw"),
			WirePlumberDir: filepath.Join(dir, "wp"), SpecLayouts: layouts})
		if err != nil {
			t.Fatal(err)
		}
		outs, err := pipewire.ReadDeclaration(res.Declaration)
		if err != nil {
			t.Fatal(err)
		}
		by := map[string]pipewire.Output{}
		for _, o := range outs {
			by[o.Output] = o
		}
		return res, by
	}
	var asked []string
	res, by := declare(func(sinks []string) (map[string][]string, error) {
		asked = sinks
		return map[string][]string{jack: six}, nil
	})
	if !slices.Equal(by[jack].Positions, six) || by[jack].Channels != 6 || len(res.Problems) != 0 {
		t.Errorf("the Sink's layout was not declared: %+v, %v", by[jack], res.Problems)
	}
	for _, name := range asked {
		if strings.HasSuffix(name, CaptureSuffix) {
			t.Errorf("asked for the layout of a Source, %s", name)
		}
	}
	if !slices.Contains(asked, jack) {
		t.Errorf("not asked for %s: %v", jack, asked)
	}

	// The API server does not answer: every output takes its hardware's
	// layout, and one problem says so.
	res, by = declare(func([]string) (map[string][]string, error) {
		return nil, errors.New("Sink study-pci-0000-00-1f-3-hdmi-1: context deadline exceeded")
	})
	if len(by[jack].Positions) != 0 || len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Error(), "hardware layout") {
		t.Errorf("fallback: %+v, problems %v", by[jack], res.Problems)
	}
}
