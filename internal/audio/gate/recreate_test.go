// SPDX-License-Identifier: Apache-2.0

package gate_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/internal/pipewire/native"
	"github.com/liken-sh/operators/test/pwtest"
)

// A declared node whose PCM cannot be opened when PipeWire starts gets
// no node from the declaration. Here the PCM is one the daemons' ALSA
// configuration ($XDG_CONFIG_HOME/alsa/asoundrc, which alsa-lib reads
// again when it changes) does not define yet, so the open fails with
// ENOENT where a held card fails with EBUSY (the VM tier has the busy
// card). The gate records it absent with each refusal, backing off,
// trusts no node a client makes with its name meanwhile, and once the
// PCM is defined makes the node; that node is the trusted one, a claim
// on it sees it, and a stream played there runs it.
func TestAbsentDeclaredNodeIsMadeAgain(t *testing.T) {
	const nodeC, uidC = "liken.audio.card0-pcm9", "5b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c4d"
	c := pwtest.NullOutput(0, 9, nodeC)
	c.Path = "liken_late"
	f := start(t, c)
	asoundrc := filepath.Join(f.d.ConfigHome, "alsa", "asoundrc")
	if err := os.MkdirAll(filepath.Dir(asoundrc), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(asoundrc, []byte("# nothing yet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	var rec gate.Trusted
	for {
		var err error
		if rec, err = gate.ReadTrusted(f.d.RuntimeDir); err != nil {
			t.Fatal(err)
		}
		if rec.Absent[nodeC].Attempts >= 3 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the record never says %s was refused three times: %+v", nodeC, rec)
		}
		time.Sleep(50 * time.Millisecond)
	}
	a := rec.Absent[nodeC]
	// Refused at once, after 1 s and after 2 s more: the next is 4 s on.
	if wait := a.Next.Sub(a.Since); wait < 6*time.Second {
		t.Errorf("the fourth attempt is due %v after the node was found absent, want at least 1+2+4 s", wait)
	}
	if _, ok := rec.IDs[nodeC]; ok {
		t.Errorf("an absent node is trusted: %+v", rec)
	}

	// A client of the daemon's socket makes a node with the declared
	// name and properties: it is not taken for the declared node.
	impostor, err := native.Dial(ctx, filepath.Join(f.d.RuntimeDir, "pipewire-0"), map[string]string{"application.name": "impostor"})
	if err != nil {
		t.Fatal(err)
	}
	defer impostor.Close()
	args := c.Args()
	args["factory.name"], args["api.alsa.path"] = "support.null-audio-sink", "null"
	if _, err := impostor.CreateNode("adapter", args); err != nil {
		t.Fatal(err)
	}
	var fake pipewire.Node
	for ok := false; !ok; fake, ok = f.mainGraph(t, ctx).NodeByName(nodeC) {
		if ctx.Err() != nil {
			t.Fatal("the impostor never appeared")
		}
		time.Sleep(20 * time.Millisecond)
	}

	if err := os.WriteFile(asoundrc, []byte("pcm.liken_late { type null }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	for {
		if rec, err = gate.ReadTrusted(f.d.RuntimeDir); err != nil {
			t.Fatal(err)
		}
		if _, ok := rec.IDs[nodeC]; ok {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s was never made: %+v", nodeC, rec)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("made %v after the PCM could be opened", time.Since(freed).Round(time.Millisecond))
	if _, still := rec.Absent[nodeC]; still || rec.IDs[nodeC] == fake.ID {
		t.Fatalf("record %+v: want %s made and trusted, not the impostor (%d)", rec, nodeC, fake.ID)
	}
	g := f.mainGraph(t, ctx)
	made, ok := g.Node(rec.IDs[nodeC])
	if !ok || made.Name != nodeC || made.Props["api.alsa.path"] != c.Path {
		t.Fatalf("trusted node %d is %+v", rec.IDs[nodeC], made)
	}
	_ = impostor.Close()

	if err := gate.WriteClaim(f.d.RuntimeDir, gate.Claim{UID: uidC, Nodes: []string{nodeC}}); err != nil {
		t.Fatal(err)
	}
	f.waitSocket(t, uidC)
	player := f.startClaimPlayer(t, ctx, uidC, nodeC)
	_, links := f.linkedStream(t, ctx, player.Process.Pid)
	for _, l := range links {
		if l.InputNode != made.ID {
			t.Fatalf("the claim's stream goes to node %d, not the made one (%d)", l.InputNode, made.ID)
		}
	}
	for {
		if n, ok := f.mainGraph(t, ctx).Node(made.ID); ok && n.State == pipewire.NodeStateRunning {
			return
		}
		if ctx.Err() != nil {
			t.Fatal("the made node never ran the claim's stream")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
