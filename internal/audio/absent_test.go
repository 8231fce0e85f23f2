// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/pipewire"
)

// An XPS 17 HDMI output the claim gate records as absent (its PCM could
// not be opened when PipeWire started): while its own PCM is closed and
// the card's other HDMI PCM is open, Ready says the device is busy and
// that the card's outputs share converters, naming the holder; while a
// program holds the PCM itself, it names that program; a PCM that is
// not busy says it could not be opened. One Warning Event per absence,
// the gate's attempts counted, and a Normal Event once the node is there.
func TestAbsentNodeIsReported(t *testing.T) {
	eps, _ := Endpoints("kitchen", xpsCards(t))
	i := slices.IndexFunc(eps, func(e Endpoint) bool { return e.Name == "kitchen-pci-0000-00-1f-3-hdmi-3" })
	if i < 0 {
		t.Fatal("no HDMI output in the recording")
	}
	e := eps[i]
	proc := t.TempDir()
	status := func(device int, text string) {
		t.Helper()
		path := filepath.Join(proc, "asound", "card"+strconv.Itoa(e.PCM.Card()), "pcm"+strconv.Itoa(device)+"p", "sub0", "status")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(proc, "4242"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "4242", "comm"), []byte("aplay\x1b\x07\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := e.PCM.Device() + 4
	status(e.PCM.Device(), "closed\n")
	status(other, "state: RUNNING\nowner_pid   : 4242\n")

	rec := record.NewFakeRecorder(10)
	o := &operator{cfg: Config{Hardware: Hardware{Proc: proc}}, metrics: newMetrics(prometheus.NewRegistry()),
		recorder: rec, absentSeen: map[string]absentSeen{}}
	ref := &corev1.ObjectReference{Kind: "Sink", Name: e.Name}
	now := time.Unix(5000, 0)
	since := now.Add(-7 * time.Second)
	o.absent = map[string]gate.Absent{e.NodeName: {Since: since, Attempts: 3, Errno: 16, Next: now.Add(4 * time.Second)}}
	ctx := context.Background()
	c := o.absentNode(ctx, e, nil, ref, now)
	if c == nil || c.Type != audiov1.ConditionReady || c.Status != metav1.ConditionFalse || c.Reason != ReasonDeviceBusy {
		t.Fatalf("Ready = %+v", c)
	}
	for _, want := range []string{pipewire.DefaultALSAPath(e.PCM.Card(), e.PCM.Device()) + " is busy (device or resource busy)", "PCM " + strconv.Itoa(other) + " by pid 4242 (aplay)", "converters", "3 times", "next in 4s"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Ready says %q, without %q", c.Message, want)
		}
	}
	if strings.ContainsAny(c.Message, "\x1b\x07") {
		t.Errorf("a program's name reaches the status raw: %q", c.Message)
	}

	// The same absence, retried twice more, with the PCM itself held.
	status(e.PCM.Device(), "state: PREPARED\nowner_pid   : 4242\n")
	o.absent[e.NodeName] = gate.Absent{Since: since, Attempts: 5, Errno: 16, Next: now.Add(16 * time.Second)}
	if c = o.absentNode(ctx, e, nil, ref, now); c == nil || !strings.Contains(c.Message, "held by pid 4242 (aplay)") || strings.Contains(c.Message, "converters") {
		t.Errorf("Ready = %+v", c)
	}
	if n := testutil.ToFloat64(o.metrics.busyRetries.WithLabelValues(e.Name, retryCreate)); n != 5 {
		t.Errorf("%v retries counted, want the gate's 5", n)
	}

	// A node that is there ends the report.
	if c = o.absentNode(ctx, e, &pipewire.Node{ID: 77, Name: e.NodeName}, ref, now); c != nil {
		t.Errorf("a node that is there: Ready %+v", c)
	}
	close(rec.Events)
	var events []string
	for ev := range rec.Events {
		events = append(events, ev)
	}
	if len(events) != 2 || !strings.HasPrefix(events[0], "Warning DeviceBusy ") || !strings.HasPrefix(events[1], "Normal NodeMade ") || !strings.Contains(events[1], "5 failed attempts") {
		t.Errorf("events %q, want one DeviceBusy and one NodeMade", events)
	}

	// Not busy: the PCM could not be opened for another reason.
	plain := absentReady(e, gate.Absent{Since: since, Attempts: 1, Next: now.Add(time.Second)}, nil, func(int) string { return "" }, now)
	if c := &plain; c.Reason != ReasonNodeNotMade || !strings.Contains(c.Message, "could not be opened") {
		t.Errorf("Ready = %+v", c)
	}
}
