// SPDX-License-Identifier: Apache-2.0

package alsatest

import (
	"os"
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/test/fakesys"
)

// xpsSysfs lays out the XPS 17's sysfs tree.
func xpsSysfs(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile("../testdata/sysfs/xps9700.tree")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := fakesys.BuildTree(data, root); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestExerciseRecorded runs the VM tier's real-kernel checks against the
// three recorded XPS cards, through a DumpDir and a stand-in /dev/snd.
func TestExerciseRecorded(t *testing.T) {
	dumps := t.TempDir()
	var all []*alsa.Dump
	for card := range 3 {
		d, err := alsa.ReadDump(alsa.DumpPath(xpsDumps, card))
		if err != nil {
			t.Fatal(err)
		}
		if err := alsa.WriteDump(dumps, d); err != nil {
			t.Fatal(err)
		}
		all = append(all, d)
	}
	devsnd := t.TempDir()
	if err := alsa.WriteDevSnd(devsnd, all...); err != nil {
		t.Fatal(err)
	}
	nodes, err := alsa.ScanDevSnd(devsnd)
	if err != nil {
		t.Fatal(err)
	}
	reports, err := exerciseCards(nodes, alsa.NewDumpDir(dumps), xpsSysfs(t))
	if err != nil {
		for _, r := range reports {
			t.Log(strings.Join(r.Log, "\n"))
		}
		t.Fatal(err)
	}
	if len(reports) != 3 {
		t.Fatalf("%d reports", len(reports))
	}
	sof := reports[0]
	if sof.Elements != 27 || sof.ELDs != 3 || len(sof.PCMs) != 7 || sof.Wrote.NumID != 27 ||
		sof.Event.Mask != alsa.EventValue || sof.Event.ID.Name != "Headphone Switch" {
		t.Errorf("card 0 report %+v", sof)
	}
	for _, r := range reports {
		t.Log(strings.Join(r.Log, "\n"))
	}
	// The write was undone.
	r, _ := alsa.NewDumpDir(dumps).Recorded(0)
	if v, _ := r.Open().Read(alsa.ElemID{NumID: 27}); v.Ints[0] != 0 {
		t.Errorf("Headphone Switch left at %v", v.Ints)
	}

	// A card with nothing writable cannot prove events: an error, not a pass.
	ro, err := alsa.NewRecorded(&alsa.Dump{Card: 0, Info: alsa.DumpCardInfo{ID: "RO", Driver: "x"}, Controls: []alsa.DumpControl{
		{NumID: 1, Iface: "CARD", Name: "Headphone Jack", Type: "BOOLEAN", Access: "read", Count: 1, Values: []int64{1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Exercise(func() (alsa.Control, error) { return ro.Open(), nil }, 0); err == nil || !strings.Contains(err.Error(), "no writable") {
		t.Errorf("read-only card: %v", err)
	}
	// A card reporting another number is caught.
	if _, err := Exercise(func() (alsa.Control, error) { return ro.Open(), nil }, 1); err == nil || !strings.Contains(err.Error(), "want card 1") {
		t.Errorf("wrong card number: %v", err)
	}
	// Here there is no /dev/snd: the VM tier's entry point says so.
	if _, err := ExerciseDevSnd(t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "no control node") {
		t.Errorf("ExerciseDevSnd on an empty root: %v", err)
	}
}
