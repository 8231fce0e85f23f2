// SPDX-License-Identifier: Apache-2.0

//go:build kubelettier

package kubelettier

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// pipewireSocket is the audio pod's PipeWire socket on the host (the
// runtime hostPath volume).
const pipewireSocket = "/run/audio.liken.sh/pipewire-0"

// graphObject is the part of one pw-dump object the tier reads.
type graphObject struct {
	ID   int    `json:"id"`
	Type string `json:"type"`
	Info struct {
		Props      map[string]any `json:"props"`
		OutputNode int            `json:"output-node-id"`
		InputNode  int            `json:"input-node-id"`
		State      string         `json:"state"`
	} `json:"info"`
}

// dumpGraph runs the host's pw-dump against the audio pod's PipeWire.
func dumpGraph(ctx context.Context) ([]graphObject, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "pw-dump", "-r", pipewireSocket).Output()
	if err != nil {
		return nil, fmt.Errorf("pw-dump: %w", err)
	}
	var objs []graphObject
	if err := json.Unmarshal(out, &objs); err != nil {
		return nil, fmt.Errorf("pw-dump output: %w", err)
	}
	return objs, nil
}

func prop(o graphObject, key string) string {
	v, _ := o.Info.Props[key].(string)
	return v
}

// streamLinks finds the consumer's playback stream (pw-cat's
// Stream/Output/Audio node) and returns the node.name of every node its
// links lead to.
func streamLinks(objs []graphObject) (stream int, targets []string) {
	names := map[int]string{}
	for _, o := range objs {
		if o.Type == "PipeWire:Interface:Node" {
			names[o.ID] = prop(o, "node.name")
			if prop(o, "media.class") == "Stream/Output/Audio" && strings.Contains(prop(o, "application.name")+prop(o, "node.name"), "pw-cat") {
				stream = o.ID
			}
		}
	}
	if stream == 0 {
		return 0, nil
	}
	for _, o := range objs {
		if o.Type == "PipeWire:Interface:Link" && o.Info.OutputNode == stream {
			targets = append(targets, names[o.Info.InputNode])
		}
	}
	return stream, targets
}

// waitLinked waits until the consumer's stream is linked, and linked only,
// to the node named node, and returns how long that took.
func waitLinked(t testing.TB, ctx context.Context, node string, timeout time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	poll(t, "the consumer's stream linked to "+node, timeout, func() (bool, string) {
		objs, err := dumpGraph(ctx)
		if err != nil {
			return false, err.Error()
		}
		stream, targets := streamLinks(objs)
		if stream == 0 {
			return false, "no pw-cat stream in the graph"
		}
		for _, tgt := range targets {
			if tgt != node {
				t.Fatalf("the consumer's stream is linked to %q, not only to %q (links to %v)", tgt, node, targets)
			}
		}
		return len(targets) > 0, fmt.Sprintf("stream %d links to %v", stream, targets)
	})
	return time.Since(began)
}
