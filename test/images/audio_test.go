// SPDX-License-Identifier: Apache-2.0

package images_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/fakesys"
)

const audioOperator = "/usr/local/bin/audio-operator"

// The pod's environment for every container that reaches PipeWire
// (deploy/audio/operator.yaml).
var pipewireEnv = []string{
	"PIPEWIRE_RUNTIME_DIR=/var/run/audio.liken.sh",
	"XDG_RUNTIME_DIR=/var/run/audio.liken.sh",
}

// TestAudioOperatorImage runs the audio pod's containers from the image,
// each in its own PID namespace as in the pod, sharing directories as the
// pod's volumes do: declare writes the declaration of the recorded Dell
// XPS 17's outputs (on ALSA's null device, as there is no card here);
// the pipewire and wireplumber sidecars start PipeWire and WirePlumber
// through the operator's binary; the startup probe passes; and pw-dump
// from the image shows every declared sink and WirePlumber's policy at
// work. The capture tools start too, and the capture container taps a
// declared sink (captureContainer).
func TestAudioOperatorImage(t *testing.T) {
	img := unpack(t, "audio-operator")
	if got := img.config.Config.Entrypoint; len(got) != 1 || got[0] != audioOperator {
		t.Fatalf("entrypoint %q, want [%s]", got, audioOperator)
	}
	tools := sandbox{image: img}
	for _, argv := range [][]string{
		{"/usr/bin/flac", "--version"}, {"/usr/bin/opusenc", "--version"},
		{"/usr/bin/pw-record", "--version"}, {"/usr/bin/pw-cli", "--version"}, {"/usr/bin/wpctl", "--help"},
	} {
		if r := tools.run(t, time.Minute, argv...); r.exit != 0 {
			t.Errorf("%s: exit %d (%v)\n%s%s", strings.Join(argv, " "), r.exit, r.err, r.stdout, r.stderr)
		}
	}

	dir := t.TempDir()
	hw, pwConf, wpConf, runtime := filepath.Join(dir, "hw"), filepath.Join(dir, "pwconf"), filepath.Join(dir, "wpconf"), filepath.Join(dir, "run")
	mkdirs(t, pwConf, wpConf, runtime)
	if _, err := fakesys.XPS17(moduleRoot(t), hw); err != nil {
		t.Fatal(err)
	}
	pwConfBind := bind{host: pwConf, path: "/etc/pipewire/pipewire.conf.d"}
	wpConfBind := bind{host: wpConf, path: "/etc/wireplumber/wireplumber.conf.d"}
	runtimeBind := bind{host: runtime, path: "/run/audio.liken.sh"}

	// The declare init container, over the recorded hardware.
	declare := sandbox{image: img, env: []string{"NODE_NAME=image-test"},
		binds: []bind{pwConfBind, wpConfBind, {host: hw, path: "/tmp", readOnly: true}}}
	r := declare.run(t, 30*time.Second, audioOperator, "-dev-snd", "/tmp/snd", "-sys-root", "/tmp/sys",
		"-recorded-cards", "/tmp/cards", "-alsa-path", "null", "-rate", "48000", "declare")
	if r.exit != 0 {
		t.Fatalf("declare: exit %d (%v)\n%s%s", r.exit, r.err, r.stdout, r.stderr)
	}
	outputs, err := pipewire.ReadDeclaration(filepath.Join(pwConf, pipewire.DeclarationFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(outputs) < 3 {
		t.Fatalf("declare wrote %d outputs, want the XPS 17's (at least 3)", len(outputs))
	}

	// The pipewire sidecar, and its startup probe from another PID
	// namespace.
	pw := sandbox{image: img, env: pipewireEnv, binds: []bind{pwConfBind, runtimeBind}}.
		start(t, "pipewire container", 3*time.Minute, audioOperator, "pipewire")
	waitFor(t, "PipeWire's socket", time.Minute, func() error {
		c, err := net.Dial("unix", filepath.Join(runtime, "pipewire-0"))
		if err != nil {
			return err
		}
		return c.Close()
	}, pw)
	client := sandbox{image: img, env: pipewireEnv, binds: []bind{runtimeBind}}
	if r := client.run(t, time.Minute, audioOperator, "graph-answers"); r.exit != 0 || !strings.Contains(r.stdout, "PipeWire answered") {
		t.Fatalf("graph-answers: exit %d (%v)\n%s%s", r.exit, r.err, r.stdout, r.stderr)
	}

	// The wireplumber sidecar.
	wp := sandbox{image: img, env: pipewireEnv, binds: []bind{wpConfBind, runtimeBind}}.
		start(t, "wireplumber container", 3*time.Minute, audioOperator, "wireplumber", "--profile="+pipewire.Profile)

	// pw-dump from the image, as the operator container runs it.
	var dump string
	t.Cleanup(func() {
		if t.Failed() && dump != "" {
			t.Logf("last pw-dump:\n%s", dump)
		}
	})
	waitFor(t, "every declared sink and WirePlumber's default sink", 30*time.Second, func() error {
		r := client.run(t, time.Minute, "/usr/bin/pw-dump")
		if r.exit != 0 {
			return fmt.Errorf("pw-dump: exit %d (%v): %s", r.exit, r.err, r.stderr)
		}
		dump = r.stdout
		return checkDump([]byte(r.stdout), outputs)
	}, pw, wp)
	t.Logf("pw-dump from the image shows the %d declared sinks; WirePlumber's default sink is one of them", len(outputs))
	if r := client.run(t, time.Minute, audioOperator, "graph-answers"); r.exit != 0 {
		t.Errorf("graph-answers with WirePlumber running: exit %d (%v)\n%s%s", r.exit, r.err, r.stdout, r.stderr)
	}

	// A claim, as the operator container prepares it: the pipewire
	// container's gate serves its socket, and a consumer in a sandbox of
	// its own with that directory alone at the runtime path sees the
	// claimed sink and nothing else.
	const uid = "3c2b1a09-8f7e-4d6c-9b5a-493827160504"
	claimed := outputs[0].Name
	if err := gate.WriteClaim(runtime, gate.Claim{UID: uid, Nodes: []string{claimed}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the claim's socket", time.Minute, func() error {
		_, err := os.Stat(gate.SocketPath(runtime, uid))
		return err
	}, pw)
	consumer := sandbox{image: img, env: []string{"PIPEWIRE_REMOTE=/run/audio.liken.sh/pipewire-0"},
		binds: []bind{{host: gate.SocketDir(runtime, uid), path: "/run/audio.liken.sh", readOnly: true}}}
	r = consumer.run(t, time.Minute, "/usr/bin/pw-dump")
	if r.exit != 0 {
		t.Fatalf("pw-dump through the claim socket: exit %d (%v)\n%s", r.exit, r.err, r.stderr)
	}
	g, err := pipewire.ParseDump([]byte(r.stdout))
	if err != nil || len(g.Nodes) != 1 || g.Nodes[0].Name != claimed {
		t.Fatalf("through the claim socket: %+v, %v\n%s", g, err, r.stdout)
	}
	if r := consumer.run(t, 5*time.Second, "/usr/bin/pw-cli", "ls", "Client"); strings.Contains(r.stdout, "Client") {
		t.Errorf("the consumer lists clients:\n%s", r.stdout)
	}

	// The capture container, tapping the declared sinks.
	var sinks []pipewire.Output
	for _, o := range outputs {
		if o.Direction == pipewire.Playback {
			sinks = append(sinks, o)
		}
	}
	captureContainer(t, img, runtimeBind, sinks)
}

// checkDump returns nil when the graph has every declared output as an
// Audio/Sink (a capture PCM as an Audio/Source) and WirePlumber has
// chosen one of the sinks as the default sink.
func checkDump(data []byte, outputs []pipewire.Output) error {
	g, err := pipewire.ParseDump(data)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, o := range outputs {
		names[o.Name] = o.Direction == pipewire.Playback
		n, ok := g.NodeByName(o.Name)
		if !ok {
			return fmt.Errorf("no node %s", o.Name)
		}
		if want := o.Direction.MediaClass(); n.MediaClass != want {
			return fmt.Errorf("node %s is %q, want %s", o.Name, n.MediaClass, want)
		}
	}
	def, err := defaultSink(data)
	if err != nil {
		return err
	}
	if !names[def] {
		return fmt.Errorf("default sink %q is not a declared output", def)
	}
	return nil
}

// defaultSink is the node name WirePlumber stored as default.audio.sink
// in the "default" metadata, which only its policy writes.
func defaultSink(data []byte) (string, error) {
	var objects []struct {
		Type  string `json:"type"`
		Props struct {
			Name string `json:"metadata.name"`
		} `json:"props"`
		Metadata []struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &objects); err != nil {
		return "", err
	}
	for _, o := range objects {
		if o.Type != "PipeWire:Interface:Metadata" || o.Props.Name != "default" {
			continue
		}
		for _, m := range o.Metadata {
			if m.Key != "default.audio.sink" {
				continue
			}
			var v struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(m.Value, &v); err != nil {
				return "", fmt.Errorf("default.audio.sink %s: %w", m.Value, err)
			}
			return v.Name, nil
		}
		return "", fmt.Errorf("WirePlumber has set no default.audio.sink yet")
	}
	return "", fmt.Errorf("no default metadata yet (WirePlumber)")
}
