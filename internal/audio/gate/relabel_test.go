// SPDX-License-Identifier: Apache-2.0

package gate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/internal/pipewire/native"
)

// A claim's client makes a plain stream and later rewrites its
// properties (a client-node Update, which PipeWire applies to every
// property but object.id and client.id): as a sink, with B's node.name
// and forged object.serial, or with the declaration's properties. The
// gate destroys the node each time, while a stream that only changes its
// media.name stays.
func TestRelabelledStreamIsDestroyed(t *testing.T) {
	f := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := node(t, f.mainGraph(t, ctx), nodeB)
	c, err := native.Dial(ctx, f.socket, map[string]string{"application.name": "relabelling client"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		for range c.Events() {
		}
	}()
	for _, tc := range []struct {
		name    string
		relabel map[string]string
		stays   bool
	}{
		{"as a sink", map[string]string{"media.class": "Audio/Sink"}, false},
		{"as B", map[string]string{"node.name": nodeB, "object.serial": fmt.Sprint(b.Serial)}, false},
		{"as declared", map[string]string{"liken.audio.card": "0", "liken.audio.pcm": "7"}, false},
		{"a new title", map[string]string{"media.name": "track 2"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "claim-stream-" + strings.ReplaceAll(tc.name, " ", "-")
			proxy, err := c.CreateClientNode(map[string]string{"media.class": "Stream/Output/Audio", "node.name": name})
			if err != nil {
				t.Fatal(err)
			}
			var made pipewire.Node
			for ok := false; !ok; made, ok = f.mainGraph(t, ctx).NodeByName(name) {
				if ctx.Err() != nil {
					t.Fatal("the stream never appeared")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := c.UpdateClientNode(proxy, tc.relabel); err != nil {
				t.Fatal(err)
			}
			// A relabelled stream goes; the retitled one shows its new
			// title and is still there a while later.
			deadline := time.Now().Add(30 * time.Second)
			for {
				now, there := f.mainGraph(t, ctx).Node(made.ID)
				if !there && !tc.stays {
					return
				}
				if !there {
					t.Fatal("a stream that changed only its title was destroyed")
				}
				if tc.stays && now.Props["media.name"] == "track 2" {
					time.Sleep(300 * time.Millisecond)
					if _, there := f.mainGraph(t, ctx).Node(made.ID); !there {
						t.Fatal("a stream that changed only its title was destroyed")
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("after the update the stream is still there as %+v", now)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	g := f.mainGraph(t, ctx)
	var named []pipewire.Node
	for _, n := range g.Nodes {
		if n.Name == nodeB {
			named = append(named, n)
		}
	}
	if len(named) != 1 || named[0].ID != b.ID {
		t.Errorf("nodes named %s: %+v, want only the declared one", nodeB, named)
	}
	if c := len(g.NodesOfClass(pipewire.MediaClassSink)); c != 2 {
		t.Errorf("%d sinks, want the 2 declared", c)
	}
}
