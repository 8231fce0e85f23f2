// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/internal/pipewire/native"
	"github.com/liken-sh/operators/test/pwtest"
)

// The two declared sinks of the trust tests: card 0's PCMs 3 and 7, the
// second one (endpoint ep-b) the one a forgery imitates.
const trustSinkA, trustSinkB = "liken.audio.card0-pcm3", "liken.audio.card0-pcm7"

// trustWorld starts PipeWire with the two declared sinks and returns a
// context that ends with the test (60 s at most), the daemons, an operator
// that knows both sinks (and endpoint ep-b on the second), and the real
// second sink's node as first dumped.
func trustWorld(t *testing.T) (context.Context, *pwtest.Daemons, *operator, pipewire.Node) {
	t.Helper()
	a, b := trustSinkA, trustSinkB
	d := pwtest.New(t, pwtest.Options{Outputs: []pipewire.Output{pwtest.NullOutput(0, 3, a), pwtest.NullOutput(0, 7, b)}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	o := &operator{cfg: Config{Remote: d.Remote()}, declared: map[string]bool{a: true, b: true},
		metrics: newMetrics(prometheus.NewRegistry()), untrusted: map[string]bool{}, trustWaitLogged: map[uint32]bool{},
		known: map[string]Endpoint{"ep-b": {Name: "ep-b", NodeName: b}}}
	real, err := d.Remote().Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	realB, _ := real.NodeByName(b)
	return ctx, d, o, realB
}

// waitRemade waits until the claim gate's record trusts a node named
// name other than gone, the declared node it had made again after gone
// was destroyed, and returns its id; that node is never forged. Nodes
// are told apart by object.serial as the record keeps it: the daemon may
// hand the destroyed node's global id to the new one.
func waitRemade(t *testing.T, ctx context.Context, d *pwtest.Daemons, name string, gone, forged pipewire.Node) uint32 {
	t.Helper()
	for {
		trust, err := gate.ReadTrusted(d.RuntimeDir)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := trust.Nodes[name]; ok && v != gone.Serial {
			if id := trust.IDs[name]; id == forged.ID {
				t.Fatalf("the record trusts the forged node %d: %+v", forged.ID, trust)
			}
			return trust.IDs[name]
		}
		if ctx.Err() != nil {
			t.Fatalf("the record does not trust a new %s after node %d was destroyed: %+v", name, gone.ID, trust)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitGraph dumps d's graph until ok accepts it and returns that graph;
// it fails t, naming what, when ctx ends first.
func waitGraph(t *testing.T, ctx context.Context, d *pwtest.Daemons, what string, ok func(*pipewire.Graph) bool) *pipewire.Graph {
	t.Helper()
	for {
		g, err := d.Remote().Dump(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ok(g) {
			return g
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never happened", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// On real PipeWire, as a client of the node's own socket (what every
// claimant held before claim sockets): a lingering adapter node with a
// declared sink's node.name, media.class and liken.audio.* properties
// (and a forged client.id and factory.id), then the real sink destroyed.
// The operator never takes the impostor for the sink: while the real one
// is there only it is seen, and once it is gone the claim gate has the
// declared node made again and that new node is the output's sink, so no
// consumer's PIPEWIRE_NODE resolves to the impostor; and the impostor is
// reported once.
func TestImpostorIsIgnored(t *testing.T) {
	const a, b = trustSinkA, trustSinkB
	ctx, d, o, realB := trustWorld(t)
	out, err := d.Command(ctx, "pw-cli", "create-node", "adapter", "{ factory.name=support.null-audio-sink node.name="+b+
		" media.class=Audio/Sink liken.audio.card=0 liken.audio.pcm=7 liken.audio.output=ep-b object.linger=true client.id=999 factory.id=18 }").CombinedOutput()
	if err != nil {
		t.Fatalf("pw-cli create-node: %v: %s", err, out)
	}
	g := waitGraph(t, ctx, d, "the impostor appearing", func(g *pipewire.Graph) bool { return len(g.NodesOfClass(pipewire.MediaClassSink)) == 3 })
	var impostor pipewire.Node
	for _, n := range g.Nodes {
		if n.Name == b && n.Serial != realB.Serial {
			impostor = n
		}
	}
	if impostor.Props["client.id"] != "999" || impostor.Declared == nil {
		t.Fatalf("the impostor is not the forgery measured: %+v", impostor)
	}
	seen := o.trustedGraph(ctx, g)
	if n, ok := seen.NodeByName(b); !ok || n.Serial != realB.Serial || len(seen.Nodes) != len(g.Nodes)-1 {
		t.Errorf("with the impostor beside it, %s reads as %+v", b, n)
	}
	if dn, ok := seen.DeclaredNode(pipewire.PCM{Card: 0, Device: 7, Direction: pipewire.Playback}); !ok || dn.Serial != realB.Serial {
		t.Errorf("the declared node of card 0 PCM 7 reads as %+v", dn)
	}

	if out, err := d.Command(ctx, "pw-cli", "destroy", fmt.Sprint(realB.ID)).CombinedOutput(); err != nil {
		t.Fatalf("pw-cli destroy: %v: %s", err, out)
	}
	remade := waitRemade(t, ctx, d, b, realB, impostor)
	g = waitGraph(t, ctx, d, "the declared sink made again", func(g *pipewire.Graph) bool {
		n, ok := g.Node(remade)
		return ok && n.Serial != realB.Serial
	})
	seen = o.trustedGraph(ctx, g)
	if n, ok := seen.NodeByName(b); !ok || n.ID != remade {
		t.Errorf("with the real sink made again, %s reads as %+v, want node %d", b, n, remade)
	}
	if _, ok := seen.NodeByName(a); !ok {
		t.Error("the other declared sink is gone from the operator's graph")
	}
	if got := testutil.ToFloat64(o.metrics.untrusted.WithLabelValues("ep-b")); got != 1 {
		t.Errorf("audio_untrusted_nodes_total{endpoint=ep-b} %v, want 1 (one impostor, reported once)", got)
	}
}

// On real PipeWire, as a client of the node's own socket: a plain stream
// that, once it is there, rewrites its properties into a declared sink's
// (node.name, media.class, liken.audio.*, and the real sink's
// object.serial, which PipeWire lets its owner replace). The operator
// knows the declared node by its global id, so the forgery is ignored
// beside the real sink and after the real sink is destroyed, when the
// claim gate has dropped that id from its record and had the declared
// node made again under another.
func TestRelabelledNodeIsIgnored(t *testing.T) {
	const a, b = trustSinkA, trustSinkB
	ctx, d, o, realB := trustWorld(t)
	c, err := native.Dial(ctx, d.SocketPath(), map[string]string{"application.name": "relabelling client"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		for range c.Events() {
		}
	}()
	proxy, err := c.CreateClientNode(map[string]string{"media.class": "Stream/Output/Audio", "node.name": "innocent"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, ok func(*pipewire.Graph) bool) *pipewire.Graph {
		t.Helper()
		return waitGraph(t, ctx, d, what, ok)
	}
	waitFor("the stream appearing", func(g *pipewire.Graph) bool { _, ok := g.NodeByName("innocent"); return ok })
	if err := c.UpdateClientNode(proxy, map[string]string{"node.name": b, "media.class": "Audio/Sink",
		"object.serial": fmt.Sprint(realB.Serial), "liken.audio.card": "0", "liken.audio.pcm": "7", "liken.audio.output": "ep-b"}); err != nil {
		t.Fatal(err)
	}
	g := waitFor("the relabel", func(g *pipewire.Graph) bool { return len(g.NodesOfClass(pipewire.MediaClassSink)) == 3 })
	var forged pipewire.Node
	for _, n := range g.Nodes {
		if n.Name == b && n.ID != realB.ID {
			forged = n
		}
	}
	if forged.Serial != realB.Serial || forged.Declared == nil {
		t.Fatalf("the forgery is not the one measured (the real sink's serial %d): %+v", realB.Serial, forged)
	}
	seen := o.trustedGraph(ctx, g)
	if n, ok := seen.NodeByName(b); !ok || n.ID != realB.ID || len(seen.Nodes) != len(g.Nodes)-1 {
		t.Errorf("with the forgery beside it, %s reads as %+v", b, n)
	}
	if dn, ok := seen.DeclaredNode(pipewire.PCM{Card: 0, Device: 7, Direction: pipewire.Playback}); !ok || dn.ID != realB.ID {
		t.Errorf("the declared node of card 0 PCM 7 reads as %+v", dn)
	}

	if out, err := d.Command(ctx, "pw-cli", "destroy", fmt.Sprint(realB.ID)).CombinedOutput(); err != nil {
		t.Fatalf("pw-cli destroy: %v: %s", err, out)
	}
	remade := waitRemade(t, ctx, d, b, realB, forged)
	g = waitFor("the declared sink made again", func(g *pipewire.Graph) bool { n, ok := g.Node(remade); return ok && n.Serial != realB.Serial })
	seen = o.trustedGraph(ctx, g)
	if n, ok := seen.NodeByName(b); !ok || n.ID != remade {
		t.Errorf("with the real sink made again, %s reads as %+v, want node %d", b, n, remade)
	}
	if _, ok := seen.NodeByName(a); !ok {
		t.Error("the other declared sink is gone from the operator's graph")
	}
	if got := testutil.ToFloat64(o.metrics.untrusted.WithLabelValues("ep-b")); got != 1 {
		t.Errorf("audio_untrusted_nodes_total{endpoint=ep-b} %v, want 1 (one forgery, reported once)", got)
	}
}
