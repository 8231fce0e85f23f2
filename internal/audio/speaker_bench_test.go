// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/bluezsim"
)

// BenchmarkSpeakerConnectToSlice is the time from a speaker's connection
// in BlueZ (with PipeWire's node for it arriving at the same moment, as
// WirePlumber makes it) to its untainted device in the slice, with the
// default settle window: the target is the settle window plus 200 ms.
// Each iteration connects the speaker and disconnects it again.
func BenchmarkSpeakerConnectToSlice(b *testing.B) {
	sim := speakerSim(b, false)
	lg, remote := newLiveGraph(b, nil)
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: study, UID: "node-uid"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := client.ResourceV1().ResourceSlices().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	untainted := make(chan bool, 100)
	go func() {
		for ev := range w.ResultChan() {
			if s, ok := ev.Object.(*resourceapi.ResourceSlice); ok {
				i := slices.IndexFunc(s.Spec.Devices, func(d resourceapi.Device) bool { return d.Name == speakerDevice })
				untainted <- i >= 0 && len(s.Spec.Devices[i].Taints) == 0
			}
		}
	}()
	dir := b.TempDir()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Node: study, KubeClient: client, Hardware: Hardware{DevSnd: filepath.Join(dir, "snd")},
			Remote: remote, PipeWireDir: filepath.Join(dir, "pw"), BusAddress: sim.Address(),
			DRA: dra.Options{RegistrarDir: filepath.Join(dir, "reg"), PluginDir: filepath.Join(dir, "plugin"), CDIDir: filepath.Join(dir, "cdi")}})
	}()
	waitState := func(want bool) time.Time {
		deadline := time.After(30 * time.Second)
		for {
			select {
			case got := <-untainted:
				if got == want {
					return time.Now()
				}
			case err := <-done:
				b.Fatalf("the operator ended: %v", err)
			case <-deadline:
				b.Fatalf("the speaker's device never became untainted=%v", want)
			}
		}
	}
	waitState(false)
	var took []time.Duration
	id := 100
	b.ResetTimer()
	for range b.N {
		id++
		start := time.Now()
		if err := sim.Connect("hci0", speakerAddress); err != nil {
			b.Fatal(err)
		}
		lg.append(b, speakerNodeObject(id, "sbc"))
		took = append(took, waitState(true).Sub(start))
		if err := sim.Disconnect("hci0", speakerAddress, bluezsim.ReasonRemote); err != nil {
			b.Fatal(err)
		}
		lg.append(b, removed(id))
		waitState(false)
	}
	b.StopTimer()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	p50, worst := took[len(took)/2], took[len(took)-1]
	b.ReportMetric(float64(p50.Milliseconds()), "p50-ms")
	b.ReportMetric(float64(worst.Milliseconds()), "max-ms")
	target := dra.DefaultSettleQuiet + 200*time.Millisecond
	fmt.Printf("speaker connected in BlueZ to its untainted device in the slice: p50 %v, max %v (target: under %v, the settle window %v + 200 ms)\n",
		p50.Round(time.Millisecond), worst.Round(time.Millisecond), target, dra.DefaultSettleQuiet)
	cancel()
	<-done
}
