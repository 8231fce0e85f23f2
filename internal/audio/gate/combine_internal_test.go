// SPDX-License-Identifier: Apache-2.0

package gate

import (
	"strings"
	"testing"
)

// The combined sink's configuration routes each output's channels by
// name, and a channel position or output that is not one is refused
// rather than written into PipeWire's configuration.
func TestCombineConfig(t *testing.T) {
	c := Combine{Positions: []string{"FL", "FR", "RL", "RR"}, Outputs: []CombineOutput{
		{Node: "tv", From: []string{"FL", "FR"}, To: []string{"FL", "FR"}},
		{Node: "rear", From: []string{"RL", "RR"}, To: []string{"FL", "FR"}},
	}}
	text, err := CombineConfig("/run/x/pipewire-0", "u1", c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`remote.name = "/run/x/pipewire-0"`, `node.name = "liken-combined-u1"`, "combine.latency-compensate = true",
		"audio.position = [ FL FR RL RR ]", `node.name = "rear" media.class = "Audio/Sink"`, "combine.audio.position = [ RL RR ] audio.position = [ FL FR ]"} {
		if !strings.Contains(text, want) {
			t.Errorf("configuration lacks %q:\n%s", want, text)
		}
	}
	for name, bad := range map[string]Combine{
		"position": {Positions: []string{"FL ] x"}, Outputs: c.Outputs},
		"uneven":   {Positions: c.Positions, Outputs: []CombineOutput{{Node: "tv", From: []string{"FL"}, To: []string{"FL", "FR"}}}},
	} {
		if _, err := CombineConfig("/s", "u1", bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
