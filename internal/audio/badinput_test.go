// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/pwtest"
)

// Bad input: a corrupt ELD, an unreadable control node, a
// missing drop-in and a garbled graph each give a line naming the card,
// PCM and problem, leave every other output published as it was, and never
// end the operator. The operator runs whole (Run) on the recorded XPS 17,
// with real PipeWire where the graph is not the bad input, and the DRA
// core publishing to a fake API server whose every slice write is kept.

const study = "study"

// The XPS 17's outputs, as Endpoints names them for node "study".
const (
	dpOutput  = "study-pci-0000-00-1f-3-hdmi-3"          // card 0 PCM 7, the Samsung U28E590
	usbOutput = "study-usb-1532-0526-00000000-usb-audio" // card 1 PCM 0, the Razer headset
)

// corruptELD is the Samsung's block with an undefined version (5) in byte
// 0: present, so the port has something plugged in, but not an ELD.
func corruptELD(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../testdata/fixtures/eld/samsung-u28e590-dp-eld-ctl.bin")
	if err != nil {
		t.Fatal(err)
	}
	b[0] = 5 << 3
	return b
}

// flakyOpener fails Open for one card while fail is set, as opening a
// control node fails once its card has gone (ENODEV).
type flakyOpener struct {
	alsa.Opener
	card int
	fail atomic.Bool
}

func (f *flakyOpener) Open(card int) (alsa.Control, error) {
	if card == f.card && f.fail.Load() {
		return nil, &os.PathError{Op: "open", Path: fmt.Sprintf("/dev/snd/controlC%d", card), Err: syscall.ENODEV}
	}
	return f.Opener.Open(card)
}

// published is one slice write's devices by name.
type published map[string]resourceapi.Device

// running is one Run of the operator against a fake API server.
type running struct {
	client *fake.Clientset
	cfg    Config // as Run was given it
	logs   func() string
	done   chan error
	ended  bool // the test saw Run end, as it expected
	mu     sync.Mutex
	writes []published // every state of the slice, in order
}

// runOperator starts Run with hw, remote and the declaration directory,
// and records every state the slice takes. The test's cleanup stops it and
// fails the test if Run ended with an error or before it was stopped.
func runOperator(t *testing.T, hw Hardware, remote pipewire.Remote, pipewireDir string, backstop time.Duration, with ...func(*Config)) *running {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
	r := &running{logs: buf.String, done: make(chan error, 1)}
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: study, UID: "node-uid"}})
	w, err := client.ResourceV1().ResourceSlices().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*resourceapi.ResourceSlice)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			p := published{}
			for _, d := range s.Spec.Devices {
				p[d.Name] = d
			}
			r.mu.Lock()
			r.writes = append(r.writes, p)
			r.mu.Unlock()
		}
	}()
	dir := t.TempDir()
	cfg := Config{Node: study, KubeClient: client, Hardware: hw, Remote: remote, PipeWireDir: pipewireDir,
		StartWait: 20 * time.Second, Backstop: backstop,
		DRA: dra.Options{RegistrarDir: filepath.Join(dir, "reg"), PluginDir: filepath.Join(dir, "plugin"),
			CDIDir: filepath.Join(dir, "cdi"), SettleQuiet: 100 * time.Millisecond}}
	for _, w := range with {
		w(&cfg)
	}
	r.client, r.cfg = client, cfg
	go func() { r.done <- Run(ctx, cfg) }()
	t.Cleanup(func() {
		if r.ended {
			cancel()
			w.Stop()
			return
		}
		r.alive(t)
		cancel()
		w.Stop()
		if err := <-r.done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r
}

// alive fails the test if Run has returned.
func (r *running) alive(t *testing.T) {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		t.Fatalf("the operator ended: %v\n%s", err, r.logs())
	default:
	}
}

// wait returns the first slice state that satisfies ok, waiting up to 30 s.
func (r *running) wait(t *testing.T, what string, ok func(published) bool) published {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, p := range r.writes {
			if ok(p) {
				r.mu.Unlock()
				return p
			}
		}
		r.mu.Unlock()
		r.alive(t)
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the slice never showed %s\n%s", what, r.logs())
	return nil
}

// since returns the slice states from the first that satisfies ok on.
func (r *running) since(ok func(published) bool) []published {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, p := range r.writes {
		if ok(p) {
			return append([]published(nil), r.writes[i:]...)
		}
	}
	return nil
}

// waitLog waits up to 30 s for a log line holding every one of parts.
func (r *running) waitLog(t *testing.T, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(r.logs(), "\n") {
			if containsAll(line, parts...) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no log line with %q\n%s", parts, r.logs())
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// allLive: every output is there with its sink and, but for the
// monitorless HDMI ports, untainted.
func allLive(want int) func(published) bool {
	return func(p published) bool {
		if len(p) != want {
			return false
		}
		for _, d := range p {
			if _, ok := d.Attributes["nodeName"]; !ok {
				return false
			}
		}
		return len(p[dpOutput].Taints) == 0
	}
}

// sameDevice compares two published devices, taints without the time the
// core stamps on them.
func sameDevice(a, b resourceapi.Device) bool {
	strip := func(d resourceapi.Device) resourceapi.Device {
		d.Taints = append([]resourceapi.DeviceTaint(nil), d.Taints...)
		for i := range d.Taints {
			d.Taints[i].TimeAdded = nil
		}
		return d
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

// othersAsBefore fails unless, in every state, every device of before but
// the ones named in except is there exactly as it was.
func othersAsBefore(t *testing.T, before published, states []published, except ...string) {
	t.Helper()
	if len(states) == 0 {
		t.Fatal("no slice state to check")
	}
	for i, p := range states {
		for name, d := range before {
			if contains(except, name) {
				continue
			}
			if got, ok := p[name]; !ok || !sameDevice(got, d) {
				t.Fatalf("state %d: %s changed or went:\nbefore %+v\nnow    %+v", i, name, d, got)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// declaredXPS declares the XPS 17's outputs on ALSA's null device and
// starts real PipeWire and WirePlumber on that declaration.
func declaredXPS(t *testing.T) (Hardware, *alsa.DumpDir, *pwtest.Daemons, int) {
	t.Helper()
	hw, _, outputs := declaredOutputs(t)
	return hw, hw.Opener.(*alsa.DumpDir), pwtest.New(t, pwtest.Options{Outputs: outputs}), len(outputs)
}

func TestCorruptELDIsReportedAndTheRestStays(t *testing.T) {
	hw, cards, pw, n := declaredXPS(t)
	op := runOperator(t, hw, pw.Remote(), pw.PipeWireConfD, time.Minute)
	before := op.wait(t, "every output live", allLive(n))

	// The Samsung's block turns to garbage: a control event, a pass.
	rec, err := cards.Recorded(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.SetELD(7, corruptELD(t)); err != nil {
		t.Fatal(err)
	}
	noMonitor := func(p published) bool { return tainted(p[dpOutput], TaintNoMonitor) }
	after := op.wait(t, "the DP output tainted no-monitor", noMonitor)
	op.waitLog(t, "A claimed card or output has a problem", "card 0 PCM 7 playback", dpOutput, "invalid ELD", "version 5")
	if _, ok := after[dpOutput].Attributes["monitorName"]; ok {
		t.Error("the DP output kept the monitor's name from a corrupt block")
	}
	othersAsBefore(t, before, op.since(noMonitor), dpOutput)

	// The monitor answers again: the problem is logged as gone once and
	// the output is as it was.
	if err := rec.SetELD(7, mustRead(t, "../../testdata/fixtures/eld/samsung-u28e590-dp-eld-ctl.bin")); err != nil {
		t.Fatal(err)
	}
	op.wait(t, "the DP output back", func(p published) bool { return sameDevice(p[dpOutput], before[dpOutput]) })
	op.waitLog(t, "problem of a claimed card or output is gone", "card 0 PCM 7 playback")
	if c := strings.Count(op.logs(), "A claimed card or output has a problem"); c != 1 {
		t.Errorf("the corrupt ELD was logged %d times, want once", c)
	}
}

func TestUnreadableControlNodeIsReportedAndTheRestStays(t *testing.T) {
	hw, _, pw, n := declaredXPS(t)
	opener := &flakyOpener{Opener: hw.Opener, card: 1}
	hw.Opener = opener
	// The backstop brings the pass: a card that cannot be opened sends
	// no event.
	op := runOperator(t, hw, pw.Remote(), pw.PipeWireConfD, 200*time.Millisecond)
	before := op.wait(t, "every output live", allLive(n))
	if _, ok := before[usbOutput]; !ok {
		t.Fatalf("no %s", usbOutput)
	}

	opener.fail.Store(true)
	// The card's microphone goes with it.
	usbInput := usbOutput + CaptureSuffix
	gone := func(p published) bool { _, out := p[usbOutput]; _, in := p[usbInput]; return !out && !in }
	op.wait(t, "the headset's output and input gone", gone)
	op.waitLog(t, "A claimed card or output has a problem", "card 1 (playback PCM 0 left out)", "control interface", "no such device")
	othersAsBefore(t, before, op.since(gone), usbOutput, usbInput)

	// The card answers again: it is published as before.
	opener.fail.Store(false)
	op.wait(t, "the headset back", func(p published) bool { return sameDevice(p[usbOutput], before[usbOutput]) })
	op.waitLog(t, "problem of a claimed card or output is gone", "card 1")
}

func TestMissingDeclarationIsReportedAndEveryOutputPublished(t *testing.T) {
	hw, _, pw, n := declaredXPS(t)
	// A clean run gives the devices to compare with.
	clean := runOperator(t, hw, pw.Remote(), pw.PipeWireConfD, time.Minute)
	want := clean.wait(t, "every output live", allLive(n))

	// The operator's view of the drop-in directory has no declaration;
	// the PipeWire it follows was started with one.
	empty := t.TempDir()
	op := runOperator(t, hw, pw.Remote(), empty, time.Minute)
	got := op.wait(t, "every output live", allLive(n))
	op.waitLog(t, "The declaration PipeWire was started with cannot be read", filepath.Join(empty, pipewire.DeclarationFile), "no such file")
	op.waitLog(t, "Output not in the declaration PipeWire loaded", dpOutput, "card=0", "pcm=7", `pcmID="HDMI 3 (*)"`)
	othersAsBefore(t, want, []published{got})
	// One line per output, not one per pass.
	time.Sleep(500 * time.Millisecond)
	if c := strings.Count(op.logs(), "Output not in the declaration PipeWire loaded"); c != n {
		t.Errorf("%d lines for %d undeclared outputs", c, n)
	}
}

// fakeGraph writes a pw-dump stand-in: its first run prints garbage, its
// second a whole graph (a node for every declared output) and then, a
// moment later, a garbled batch, and every later run the whole graph,
// staying until it is stopped. runs counts its starts.
func fakeGraph(t *testing.T, outputs []pipewire.Output) (pipewire.Remote, func() int) {
	t.Helper()
	dir := t.TempDir()
	// The core's cookie and each node's global id and serial, as the
	// claim gate records them beside a real PipeWire.
	nodes := []map[string]any{{"id": 0, "type": pipewire.TypeCore, "info": map[string]any{"cookie": 4242}}}
	trusted := gate.Trusted{Cookie: 4242, Nodes: map[string]uint64{}, IDs: map[string]uint32{}}
	for i, o := range outputs {
		nodes = append(nodes, map[string]any{"id": 40 + i, "type": pipewire.TypeNode, "info": map[string]any{
			"state": "suspended",
			"props": map[string]any{"node.name": o.Name, "media.class": "Audio/Sink", "liken.audio.card": o.Card,
				"liken.audio.pcm": o.Device, "liken.audio.output": o.Output, "object.serial": 50 + i},
		}})
		trusted.Nodes[o.Name] = uint64(50 + i)
		trusted.IDs[o.Name] = uint32(40 + i)
	}
	if data, err := json.Marshal(trusted); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(filepath.Join(dir, gate.TrustedFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	graph, err := json.Marshal(nodes)
	if err != nil {
		t.Fatal(err)
	}
	graphPath, count := filepath.Join(dir, "graph.json"), filepath.Join(dir, "runs")
	if err := os.WriteFile(graphPath, append(graph, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`#!/bin/sh
n=$(($(cat %[1]q 2>/dev/null || echo 0) + 1))
echo $n > %[1]q
case $n in
1) echo 'Segmentation fault' ;;
2) cat %[2]q; sleep 1; echo '[{"id": 40, "type": "PipeWire:Interface:Node", "info": {"props": ' ; echo '}]'; exec sleep 60 ;;
*) cat %[2]q; exec sleep 60 ;;
esac
`, count, graphPath)
	path := filepath.Join(dir, "pw-dump")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	runs := func() int {
		b, _ := os.ReadFile(count)
		var n int
		fmt.Sscan(string(b), &n)
		return n
	}
	return pipewire.Remote{RuntimeDir: dir, PWDump: path}, runs
}

func TestGarbledGraphIsReportedAndNothingHalfApplied(t *testing.T) {
	hw, dir, outputs := declaredOutputs(t)
	remote, runs := fakeGraph(t, outputs)
	op := runOperator(t, hw, remote, dir, time.Minute)

	// At start: garbage instead of a graph is logged at once and read
	// again; nothing is published from it.
	op.waitLog(t, "The PipeWire graph could not be read; reading it again", "bad pw-dump output")
	first := op.wait(t, "every output live", allLive(len(outputs)))
	// Running: a garbled batch ends that pw-dump; the next one is
	// followed, and no state of the slice ever lost a sink.
	op.waitLog(t, "The PipeWire graph could not be read", "bad pw-dump output", "inARow=1")
	deadline := time.Now().Add(30 * time.Second)
	for runs() < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if runs() < 3 {
		t.Fatalf("pw-dump ran %d times, want a third run after the garbled batch\n%s", runs(), op.logs())
	}
	time.Sleep(500 * time.Millisecond) // a pass on the third run's graph, had it changed anything
	othersAsBefore(t, first, op.since(allLive(len(outputs))))
}

// Reconcile and Declare name what they could not read and return every
// other output as a clean read does.
func TestReconcileAndDeclareNameBadCardsAndOutputs(t *testing.T) {
	hw := xpsHardware(t)
	clean, err := Reconcile(study, hw, nil)
	if err != nil || len(clean.Problems) != 0 {
		t.Fatalf("clean pass: %v %v", err, clean.Problems)
	}
	cards := hw.Opener.(*alsa.DumpDir)
	rec, err := cards.Recorded(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.SetELD(7, corruptELD(t)); err != nil {
		t.Fatal(err)
	}
	opener := &flakyOpener{Opener: cards, card: 1}
	opener.fail.Store(true)
	hw.Opener = opener

	bad, err := Reconcile(study, hw, nil)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, p := range bad.Problems {
		texts = append(texts, p.Error())
	}
	joined := strings.Join(texts, "\n")
	for _, want := range [][]string{
		{"card 0 PCM 7 playback", dpOutput, "invalid ELD", "published with no monitor"},
		{"card 1 (playback PCM 0 left out)", "control interface", "/dev/snd/controlC1", "no such device"},
	} {
		if !containsAll(joined, want...) {
			t.Errorf("no problem with %q in\n%s", want, joined)
		}
	}
	if len(bad.Problems) != 2 {
		t.Errorf("%d problems, want 2:\n%s", len(bad.Problems), joined)
	}
	byName := published{}
	for _, d := range bad.Devices {
		byName[d.Name] = resourceapi.Device{Name: d.Name}
	}
	for _, d := range clean.Devices {
		_, ok := byName[d.Name]
		switch {
		case strings.HasPrefix(d.Name, usbOutput) && ok:
			t.Errorf("%s published without its card", d.Name)
		case !strings.HasPrefix(d.Name, usbOutput) && !ok:
			t.Errorf("%s left out", d.Name)
		}
	}
	for i, d := range bad.Devices {
		for _, c := range clean.Devices {
			if c.Name == d.Name && d.Name != dpOutput && !reflect.DeepEqual(c, d) {
				t.Errorf("device %d %s differs from a clean read", i, d.Name)
			}
		}
	}

	res, err := Declare(DeclareConfig{Hardware: hw, Node: study, PipeWireDir: t.TempDir(), WirePlumberDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 2 || !strings.Contains(fmt.Sprint(res.Problems), "invalid ELD") {
		t.Errorf("declare's problems: %v", res.Problems)
	}
}

func tainted(d resourceapi.Device, key string) bool {
	for _, t := range d.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A pw-dump whose every stream starts whole and then garbles is a failed
// read each time, not a fresh start: the operator backs off, and after
// three in a row publishes everything tainted and ends, instead of
// restarting pw-dump in a hot loop.
func TestGarblingStreamEndsInsteadOfLooping(t *testing.T) {
	hw, dir, outputs := declaredOutputs(t)
	remote, runs := fakeGraph(t, outputs)
	// Every run: the whole graph, then a garbled batch.
	script := fmt.Sprintf("#!/bin/sh\nn=$(($(cat %[1]q 2>/dev/null || echo 0) + 1)); echo $n > %[1]q\ncat %[2]q; echo '[{\"id\": 40, garbage'\n",
		filepath.Join(filepath.Dir(remote.PWDump), "runs"), filepath.Join(filepath.Dir(remote.PWDump), "graph.json"))
	if err := os.WriteFile(remote.PWDump, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	op := runOperator(t, hw, remote, dir, time.Minute)
	select {
	case err := <-op.done:
		op.ended = true
		if err == nil || !strings.Contains(err.Error(), "3 failed reads") {
			t.Fatalf("operator ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still running after 30 s; pw-dump ran %d times", runs())
	}
	if n := runs(); n > 4 {
		t.Fatalf("pw-dump ran %d times for three failed reads", n)
	}
}
