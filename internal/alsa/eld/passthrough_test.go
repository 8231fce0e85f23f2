// SPDX-License-Identifier: Apache-2.0

package eld

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPassthrough: the recorded sinks' compressed codings, named once each
// in coding order whatever their descriptors' order.
func TestPassthrough(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string
	}{
		// A receiver: every passthrough coding, and DSD, which has none.
		{"forum-intel-h97-onkyo-txnr828-eld0.0.txt", []string{"ac3", "dts", "eac3", "dts_hd", "truehd"}},
		// A TV listing DTS before AC-3.
		{"forum-intel-lgtv-speakers0xffff-eld3.0.txt", []string{"ac3", "dts"}},
	} {
		p, err := ParseProc(readFixture(t, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, p.ELD.Passthrough()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.file, diff)
		}
	}
	// A monitor of LPCM alone offers nothing.
	e, err := Parse(readFixture(t, "alsa-ucm-conf-248-dell-g2422hs-eld-ctl.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Passthrough(); got != nil {
		t.Errorf("an LPCM monitor offers %v", got)
	}
	// Two AC-3 descriptors name it once.
	twice := &ELD{SADs: []SAD{{Coding: CodingAC3}, {Coding: CodingMPEG1}, {Coding: CodingAC3}}}
	if diff := cmp.Diff([]string{"ac3"}, twice.Passthrough()); diff != "" {
		t.Errorf("two AC-3 descriptors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ac3", "dts", "eac3", "dts_hd", "truehd"}, PassthroughNames()); diff != "" {
		t.Errorf("PassthroughNames (-want +got):\n%s", diff)
	}
}
