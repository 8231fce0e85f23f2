// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	oci "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/liken-sh/operators/test/cditest"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/pwtest"
)

// TestAdmissionPolicyFiles fails when a YAML file under deploy/ holds a
// ValidatingAdmissionPolicy or its binding and the demo does not apply
// it, or when the demo names a file that holds none: the demo must refuse
// whatever a deployed cluster refuses.
func TestAdmissionPolicyFiles(t *testing.T) {
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	policy := regexp.MustCompile(`(?m)^kind:\s*ValidatingAdmissionPolicy(Binding)?\s*$`)
	var found []string
	err = filepath.WalkDir(filepath.Join(root, "deploy"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if policy.Match(data) {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 {
		t.Fatal("no admission policy under deploy/: the walk looks in the wrong place")
	}
	for _, f := range found {
		if !slices.Contains(admissionPolicyFiles, f) {
			t.Errorf("%s holds an admission policy the demo does not apply: add it to admissionPolicyFiles", f)
		}
	}
	for _, f := range admissionPolicyFiles {
		if !slices.Contains(found, f) {
			t.Errorf("admissionPolicyFiles names %s, which holds no admission policy", f)
		}
	}
}

// The capture goes outside the work directory the demo removes: under
// $LIKEN_CACHE, else the user's cache directory, and the directory is
// there for it; the last line printed names that file.
func TestCaptureIsKept(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("LIKEN_CACHE", cache)
	got, err := keptCapture()
	if want := filepath.Join(cache, "demo", "capture.wav"); err != nil || got != want {
		t.Fatalf("keptCapture with LIKEN_CACHE=%s: %q, %v; want %s", cache, got, err, want)
	}
	if fi, err := os.Stat(filepath.Dir(got)); err != nil || !fi.IsDir() {
		t.Errorf("keptCapture did not create %s: %v", filepath.Dir(got), err)
	}
	xdg := t.TempDir()
	t.Setenv("LIKEN_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", xdg)
	if got, err := keptCapture(); err != nil || got != filepath.Join(xdg, "liken", "demo", "capture.wav") {
		t.Errorf("keptCapture with XDG_CACHE_HOME=%s: %q, %v; want it under liken/demo there", xdg, got, err)
	}
	note := endNote(got)
	lines := strings.Split(strings.TrimSuffix(note, "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasSuffix(last, " "+got) || !strings.Contains(last, "kept") {
		t.Errorf("the demo's last line is %q; want it to say the capture %s is kept", last, got)
	}
}

// wantLines fails t unless every one of want is in some line of out.
func wantLines(t *testing.T, out string, want ...string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for _, w := range want {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, w) }) {
			t.Errorf("no line says %q in:\n%s", w, out)
		}
	}
}

// The shared headset's lines: both claims on one device with their
// shares and streams, each in its own socket with its role, both tones
// in the capture, and the ducking measured beside its targets, met or
// missed.
func TestSharedHeadsetLines(t *testing.T) {
	shares := []share{
		{claim: "headset-music", pod: "jukebox", device: "node-1-usb-headset", shareID: "share-a", streams: 4,
			socket: "/run/claims/uid-a/pipewire-0", mountedAt: "/var/run/audio.liken.sh/uid-a",
			env: []string{"PIPEWIRE_REMOTE=/var/run/audio.liken.sh/uid-a/pipewire-0", "PIPEWIRE_PROPS={ media.role = Music }"}},
		{claim: "headset-announcements", pod: "doorbell", device: "node-1-usb-headset", shareID: "share-b", streams: 4,
			socket: "/run/claims/uid-b/pipewire-0", mountedAt: "/var/run/audio.liken.sh/uid-b",
			env: []string{"PIPEWIRE_PROPS={ media.role = Announcement }"}},
	}
	wantLines(t, sharesReport(shares, "node-1"),
		"default/headset-music: allocated by kube-scheduler to node-1-usb-headset, share share-a, 4 of its 16 streams consumed; pod default/jukebox",
		"default/headset-announcements: allocated by kube-scheduler to node-1-usb-headset, share share-b, 4 of its 16 streams consumed; pod default/doorbell",
		"default/headset-music prepared into its own socket /run/claims/uid-a/pipewire-0, mounted at /var/run/audio.liken.sh/uid-a: PIPEWIRE_REMOTE=",
		"default/headset-announcements prepared into its own socket /run/claims/uid-b/pipewire-0",
		"PIPEWIRE_PROPS={ media.role = Announcement }")

	h := heard{Ducking: pwtest.Ducking{Before: 0.2, During: 0.02, After: 0.2, Announcement: 0.2, DuckedDB: 20,
		ToDuck: 10 * time.Millisecond, ToRestore: 80 * time.Millisecond, Start: 1620 * time.Millisecond},
		duckDB: 20, length: 3880 * time.Millisecond, peakBefore: 400, peakDuring: 1000}
	wantLines(t, heardReport(h),
		"1.62 s into the capture, doorbell plays 1000 Hz",
		"for 3.88 s",
		"two tones in the capture: its strongest frequency is 400 Hz before the announcement and 1000 Hz while it plays",
		"the music at 0.200 of full scale (0.40 at its claim's volume, 50 %), the announcement at 0.200",
		"ducked the music by 20.0 dB (the Sink's spec.duckDecibels unset: the default, 20 dB)",
		"ducked 10 ms after the announcement's first samples reached the sink (target ≤ 100 ms after: met)",
		"restored 80 ms after its last (target ≤ 500 ms: met)")
	h.ToDuck, h.ToRestore, h.duckSet, h.duckDB = -20*time.Millisecond, 600*time.Millisecond, true, 12
	wantLines(t, heardReport(h),
		"(the Sink's spec.duckDecibels, 12 dB)",
		"ducked 20 ms before (the claim gate ducks once the announcement's stream runs) the announcement's first samples reached the sink (target ≤ 100 ms after: met)",
		"restored 600 ms after its last (target ≤ 500 ms: missed)")
	h.ToDuck = 150 * time.Millisecond
	wantLines(t, heardReport(h), "ducked 150 ms after the announcement's first samples reached the sink (target ≤ 100 ms after: missed)")
	// hack/fresh-root-test.sh finds the listening section's capture by
	// its "spectrum peak"; no other line may say it.
	for _, out := range []string{sharesReport(shares, "node-1"), heardReport(h)} {
		if strings.Contains(out, "spectrum peak") {
			t.Errorf("a shared headset's line says \"spectrum peak\", which marks the listening section's capture:\n%s", out)
		}
	}
}

// The home theatre's lines: the two requests' outputs, PIPEWIRE_NODE
// naming the combined sink, a variable per request, the tones on each
// output and the alignment after the stated delay beside its target.
func TestHomeTheatreLines(t *testing.T) {
	th := theatre{tvDevice: "node-1-dp", surroundDevice: "node-1-jack", combined: "liken-combined-uid",
		tv: "liken.audio.dp", surround: "liken.audio.jack", frontOnTV: 0.3, rearOnTV: 0.001, rearOnSurround: 0.3, frontOnSurround: 0.001,
		lag: 41200 * time.Microsecond}
	wantLines(t, theatreReport(th, "node-1"),
		"tv → node-1-dp, surround → node-1-jack; pod default/living-room bound to node-1",
		"PIPEWIRE_NODE=liken-combined-uid (the claim's combined sink)",
		"LIKEN_AUDIO_NODE_TV=liken.audio.dp",
		"LIKEN_AUDIO_NODE_SURROUND=liken.audio.jack",
		"the TV plays the front tone at 0.300 (the rear at 0.001), the surround pair the rear tone at 0.300 (the front at 0.001)",
		"the tone left the TV's sink 41.2 ms after the surround pair's, whose output states 40 ms more delay: after each output's stated delay they sound 1.2 ms apart (target ≤ 5 ms: met)")
	th.lag = 30 * time.Millisecond
	wantLines(t, theatreReport(th, "node-1"), "they sound 10.0 ms apart (target ≤ 5 ms: missed)")
}

// A tool run as a claim's container gets the container's environment,
// and its PIPEWIRE_REMOTE is the host's end of the socket the
// container's mount binds; a PIPEWIRE_REMOTE no mount holds is refused.
func TestContainerCommand(t *testing.T) {
	ct := container{spec: &oci.Spec{Process: &oci.Process{Env: []string{
		"PIPEWIRE_REMOTE=/var/run/audio.liken.sh/uid/pipewire-0", "PIPEWIRE_NODE=liken.audio.dp"}},
		Mounts: []oci.Mount{{Source: "/host/claims/uid", Destination: "/var/run/audio.liken.sh/uid"}}}}
	cmd, err := ct.command(context.Background(), &pwtest.Daemons{RuntimeDir: "/host"}, "pw-play", "-")
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"PIPEWIRE_REMOTE": "/host/claims/uid/pipewire-0", "PIPEWIRE_NODE": "liken.audio.dp"} {
		if got, _ := cditest.Env(cmd.Env, key); got != want {
			t.Errorf("the tool's %s (the last set) is %q, want %q", key, got, want)
		}
	}
	ct.spec.Mounts = nil
	if _, err := ct.command(context.Background(), &pwtest.Daemons{}, "pw-play"); err == nil || !strings.Contains(err.Error(), "in no mount") {
		t.Errorf("a socket outside every mount: %v", err)
	}
}
