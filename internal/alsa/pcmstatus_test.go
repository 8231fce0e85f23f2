// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// heldStatus is a substream status file as Linux 6.1 prints it for a
// PCM aplay holds.
const heldStatus = `state: RUNNING
owner_pid   : 4242
trigger_time: 1733.123456789
tstamp      : 1734.000000000
delay       : 2048
avail       : 4096
avail_max   : 4100
-----
hw_ptr      : 96000
appl_ptr    : 98048
`

// A /proc/asound tree with an HDMI card: PCM 3 held by pid 4242, PCM 7
// closed, a capture PCM open by a pid the reader cannot see. Every
// substream is read in order, one PCM alone when asked, and a status
// file that is neither closed nor a state is an error naming it.
func TestReadSubstreams(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	write("card1/pcm3p/sub0/status", heldStatus)
	write("card1/pcm7p/sub0/status", "closed\n")
	write("card1/pcm0c/sub0/status", "state: PREPARED\nowner_pid   : 0\n")
	write("card1/pcm3p/info", "card: 1\n")
	got, err := ReadSubstreams(root, 1, -1)
	if err != nil {
		t.Fatal(err)
	}
	want := []Substream{
		{Card: 1, Device: 0, Stream: Capture, Open: true, State: "PREPARED"},
		{Card: 1, Device: 3, Stream: Playback, Open: true, State: "RUNNING", OwnerPID: 4242},
		{Card: 1, Device: 7, Stream: Playback},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("substreams (-want +got):\n%s", d)
	}
	if got, err := ReadSubstreams(root, 1, 7); err != nil || len(got) != 1 || got[0].Open {
		t.Errorf("PCM 7 alone: %+v, %v", got, err)
	}
	if got, err := ReadSubstreams(root, 2, -1); err != nil || len(got) != 0 {
		t.Errorf("a card with no directory: %+v, %v", got, err)
	}
	write("card1/pcm7p/sub0/status", "garbage\n")
	if _, err := ReadSubstreams(root, 1, -1); err == nil || !strings.Contains(err.Error(), "pcm7p/sub0/status") {
		t.Errorf("a garbled status: %v", err)
	}
	for _, bad := range []string{"state: running\n", "state: RUNNING\nowner_pid   : -3\n", "state: RUNNING\nowner_pid   : x\n", ""} {
		if _, err := ParseSubstreamStatus([]byte(bad)); err == nil {
			t.Errorf("%q parses", bad)
		}
	}
}
