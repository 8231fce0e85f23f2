// SPDX-License-Identifier: Apache-2.0

package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/liken-sh/operators/internal/pipewire/native"
	"github.com/liken-sh/operators/internal/tailbuf"
)

// Combine is the combined sink of a claim that holds more than one
// output: one sink (CombinedNodeName) whose channels are played to
// every output, each output taking the channels From of the combined
// sink onto its own channels To. The sink is made by PipeWire's
// combine-stream module (libpipewire-module-combine-stream) in a
// process of its own (pipewire -c, the way PipeWire's filter-chain.conf
// runs a module outside the daemon: a module runs in the process that
// loads it, and the native protocol loads none into the daemon), with
// combine.latency-compensate on, so the module delays each output's
// stream by how much less latency its output reports than the slowest
// one's: an output's stated delay (an HDMI sink's audio sync delay from
// its ELD, written as the ALSA node's latency.offset.nsec; a Bluetooth
// speaker's transport latency, which PipeWire's bluez5 nodes report)
// is compensated, so every output sounds at once.
type Combine struct {
	// Positions is the combined sink's channel map (audio.position),
	// e.g. ["FL", "FR", "RL", "RR"].
	Positions []string `json:"positions"`
	// Outputs are the outputs it plays to.
	Outputs []CombineOutput `json:"outputs"`
}

// CombineOutput is one output of a combined sink.
type CombineOutput struct {
	// Node is the output's node.name.
	Node string `json:"node"`
	// From are the combined sink's channels this output plays
	// (combine.audio.position), To the output's channels they go to
	// (audio.position), one for one.
	From []string `json:"from"`
	To   []string `json:"to"`
}

// CombinedNodeName is the node.name of claim uid's combined sink.
func CombinedNodeName(uid string) string {
	return "liken-combined-" + uid
}

// CombineDir holds, under the runtime directory, the configuration of
// each combined sink's process, <uid>.conf. It is apart from a claim's
// socket directory, which a consumer's container holds.
const CombineDir = "combine"

// validPosition is a channel position as PipeWire spells one (FL, RL,
// AUX0 ...).
func validPosition(p string) bool {
	return p != "" && len(p) <= 8 && strings.Trim(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == ""
}

// CombineConfig is the configuration of claim uid's combined-sink
// process (`pipewire -c`), connecting to the daemon at socket: PipeWire's
// SPA-JSON text, every value written as a JSON string, which SPA's JSON
// reads as it is. The modules it loads must be in the image that runs
// the gate (internal/imageset checks them against this text). Errors
// name a channel position that is not one, or an output whose channels
// do not pair one for one.
func CombineConfig(socket, uid string, c Combine) (string, error) {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	positions := func(ps []string) (string, error) {
		out := make([]string, 0, len(ps))
		for _, p := range ps {
			if !validPosition(p) {
				return "", fmt.Errorf("channel position %q", p)
			}
			out = append(out, p)
		}
		return "[ " + strings.Join(out, " ") + " ]", nil
	}
	all, err := positions(c.Positions)
	if err != nil {
		return "", err
	}
	var rules []string
	for _, o := range c.Outputs {
		from, err := positions(o.From)
		if err != nil {
			return "", err
		}
		to, err := positions(o.To)
		if err != nil {
			return "", err
		}
		if len(o.From) != len(o.To) || len(o.From) == 0 {
			return "", fmt.Errorf("output %s: %d channels from the combined sink onto %d", o.Node, len(o.From), len(o.To))
		}
		rules = append(rules, fmt.Sprintf(`{ matches = [ { node.name = %s media.class = "Audio/Sink" } ]
          actions = { create-stream = { combine.audio.position = %s audio.position = %s } } }`, q(o.Node), from, to))
	}
	return fmt.Sprintf(`context.properties = { log.level = 1 }
context.spa-libs = {
    audio.convert.* = audioconvert/libspa-audioconvert
    support.*       = support/libspa-support
}
context.modules = [
    { name = libpipewire-module-protocol-native }
    { name = libpipewire-module-client-node }
    { name = libpipewire-module-adapter }
    { name = libpipewire-module-combine-stream
      args = {
        remote.name = %s
        combine.mode = sink
        node.name = %s
        node.description = %s
        combine.latency-compensate = true
        combine.props = { audio.position = %s }
        stream.props = { node.dont-reconnect = true }
        stream.rules = [
          %s
        ]
      }
    }
]
`, q(socket), q(CombinedNodeName(uid)), q("Outputs of claim "+uid), all, strings.Join(rules, "\n          ")), nil
}

// combiner is one claim's combined-sink process.
type combiner struct {
	conf     Combine
	cmd      *exec.Cmd
	done     chan struct{}
	stopping atomic.Bool // set by stop, so its own SIGTERM is not logged as an end
}

func (c *combiner) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *combiner) stop() {
	c.stopping.Store(true)
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	<-c.done
}

// syncCombines runs a combined-sink process for every served claim with
// a Combine, starting one again when it ended or its Combine changed,
// and stops those of claims no longer served.
func (s *session) syncCombines() {
	if s.combines == nil {
		s.combines = map[string]*combiner{}
	}
	for uid, c := range s.combines {
		sv := s.served[uid]
		if sv == nil || sv.claim.Combine == nil || !equalCombine(*sv.claim.Combine, c.conf) || c.exited() {
			c.stop()
			delete(s.combines, uid)
			if sv == nil || sv.claim.Combine == nil {
				_ = os.Remove(filepath.Join(s.cfg.RuntimeDir, CombineDir, uid+".conf"))
			}
		}
	}
	for _, uid := range sortedKeys(s.served) {
		sv := s.served[uid]
		if sv.claim.Combine == nil || s.combines[uid] != nil {
			continue
		}
		c, err := s.startCombine(uid, *sv.claim.Combine)
		if err != nil {
			s.cfg.Logf("claim gate: combined sink of claim %s: %v", uid, err)
			continue
		}
		s.combines[uid] = c
		s.cfg.Logf("claim gate: combined sink %s of claim %s plays to %d outputs (pid %d)", CombinedNodeName(uid), uid, len(c.conf.Outputs), c.cmd.Process.Pid)
	}
}

func equalCombine(a, b Combine) bool {
	return slices.Equal(a.Positions, b.Positions) && slices.EqualFunc(a.Outputs, b.Outputs, func(x, y CombineOutput) bool {
		return x.Node == y.Node && slices.Equal(x.From, y.From) && slices.Equal(x.To, y.To)
	})
}

func (s *session) startCombine(uid string, c Combine) (*combiner, error) {
	text, err := CombineConfig(s.cfg.Socket, uid, c)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(s.cfg.RuntimeDir, CombineDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, uid+".conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command("pipewire", "-c", path)
	log, err := os.OpenFile(filepath.Join(dir, uid+".log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	tail := tailbuf.New(combineTail)
	cmd.Stdout = io.MultiWriter(log, tail)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	cb := &combiner{conf: c, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		log.Close()
		if !cb.stopping.Load() {
			// Ended on its own: what it said last is why, and the
			// session starts it again at its next sync.
			s.cfg.Logf("claim gate: combined sink %s of claim %s ended (%v): %s", CombinedNodeName(uid), uid, err, bytes.TrimSpace(tail.Bytes()))
		}
		close(cb.done)
	}()
	return cb, nil
}

// combineTail is how much of a combined-sink process's last output is
// kept to say why it ended, in bytes.
const combineTail = 2048

// stopCombines stops every combined-sink process (the session ends).
func (s *session) stopCombines() {
	for uid, c := range s.combines {
		c.stop()
		delete(s.combines, uid)
	}
}

// combinedID returns the global id of the combined sink named name: an
// Audio/Sink of that node.name that no client of a claim socket made
// (global destroys any node such a client makes that is not a stream,
// so no claim can stand one in), the lowest id of several.
func (s *session) combinedID(name string) (uint32, bool) {
	if !strings.HasPrefix(name, "liken-combined-") {
		return 0, false
	}
	var id uint32
	found := false
	for _, g := range s.globals {
		if g.Type == native.TypeNode && g.Props["node.name"] == name && g.Props["media.class"] == "Audio/Sink" && !s.ownedByClaim(g) && (!found || g.ID < id) {
			id, found = g.ID, true
		}
	}
	return id, found
}
