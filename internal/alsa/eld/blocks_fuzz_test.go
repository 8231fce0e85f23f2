// SPDX-License-Identifier: Apache-2.0

package eld

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseProcBlocks: no input panics; accepted text yields one block per
// monitor_present line, each as ParseProc reads it alone, within the
// kernel's bounds.
func FuzzParseProcBlocks(f *testing.F) {
	var all [][]byte
	for _, name := range []string{"forum-intel-h97-onkyo-txnr828-eld0.0.txt",
		"forum-intel-lgtv-speakers0xffff-eld3.0.txt", "alsa-devel-fiji-tb-no-monitor-eld0.0.txt"} {
		b, err := os.ReadFile(filepath.Join(fixtures, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		all = append(all, b)
	}
	f.Add(bytes.Join(all, []byte("\n")))
	f.Add(append(append([]byte{}, all[0]...), all[2]...))
	f.Fuzz(func(t *testing.T, text []byte) {
		blocks, err := ParseProcBlocks(text)
		if err != nil {
			if blocks != nil {
				t.Fatalf("error %v with %d blocks", err, len(blocks))
			}
			return
		}
		if len(blocks) == 0 {
			t.Fatal("accepted with no block")
		}
		if len(blocks) > bytes.Count(text, []byte("monitor_present")) {
			t.Fatalf("%d blocks from %d monitor_present lines", len(blocks), bytes.Count(text, []byte("monitor_present")))
		}
		for i, p := range blocks {
			if (p.ELD != nil) != p.ELDValid {
				t.Fatalf("block %d: valid %v with ELD %v", i+1, p.ELDValid, p.ELD)
			}
			if e := p.ELD; e != nil && (len(e.SADs) > 15 || e.LPCMChannels() > 8 || e.SpeakerAllocation > 0x7f || len(e.MonitorName) > MaxMonitorNameLen) {
				t.Fatalf("block %d out of bounds: %+v", i+1, e)
			}
		}
	})
}
