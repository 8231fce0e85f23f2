// SPDX-License-Identifier: Apache-2.0

package images_test

import (
	"strings"
	"testing"
	"time"
)

// TestStaticImages runs the static images' entrypoints as their
// containers run (read-only root, no capability): --help prints each
// binary's flags and exits 0, and with the environment deploy/*/operator.yaml
// gives them missing, each refuses to start with the reason, which shows the
// binary runs its own code in the image and not only flag parsing.
func TestStaticImages(t *testing.T) {
	for _, tc := range []struct {
		name, entry, flag, missing string
	}{
		{"bluetooth-operator", "/usr/local/bin/bluetooth-operator", "-kubelet-plugins-dir", "NODE_NAME and POD_NAMESPACE must be set"},
		{"bluetooth-bondfetch", "/usr/local/bin/bluetooth-bondfetch", "-root", "POD_NAMESPACE is not set"},
		{"liken-inventory", "/usr/local/bin/liken-inventory", "-sys-root", "NODE_NAME must be set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := unpack(t, tc.name)
			if got := img.config.Config.Entrypoint; len(got) != 1 || got[0] != tc.entry {
				t.Fatalf("entrypoint %q, want [%s]", got, tc.entry)
			}
			s := sandbox{image: img}
			r := s.run(t, time.Minute, tc.entry, "--help")
			if r.exit != 0 || !strings.Contains(r.stderr, "Usage of") || !strings.Contains(r.stderr, tc.flag) {
				t.Errorf("--help: exit %d (%v), want 0 and the usage naming %s:\n%s%s", r.exit, r.err, tc.flag, r.stdout, r.stderr)
			}
			r = s.run(t, time.Minute, tc.entry)
			if r.exit != 1 || !strings.Contains(r.stderr, tc.missing) {
				t.Errorf("without its environment: exit %d (%v), want 1 and %q:\n%s%s", r.exit, r.err, tc.missing, r.stdout, r.stderr)
			}
		})
	}
}

// TestCLIImage runs each kubectl plugin's image as liken's plugin manager
// would read it: --version names the release the build gave it (one
// word), the binary needs nothing from the image but itself (it is
// static), and it runs its own checks: a command short of its argument,
// and (bluetooth) a bad --device refused before any API server is asked,
// with the value quoted.
func TestCLIImage(t *testing.T) {
	for _, tc := range []struct {
		image, binary string
		bad           []string
		want          string
	}{
		{"audio-operator-cli", "kubectl-liken-audio", []string{"capture"}, "accepts 1 arg"},
		{"bluetooth-operator-cli", "kubectl-liken-bluetooth", []string{"unpair"}, "unpair takes one argument"},
		{"bluetooth-operator-cli", "kubectl-liken-bluetooth",
			[]string{"pair", "--device", "gamepad", "--adapter", "00-1a-7d-da-71-13", "--server", "https://127.0.0.1:1"},
			`--device "gamepad" is not a Bluetooth address`},
	} {
		t.Run(tc.image+"/"+tc.bad[0], func(t *testing.T) {
			img := unpack(t, tc.image)
			entry := img.config.Config.Entrypoint
			if len(entry) != 1 || entry[0] != "/usr/local/bin/"+tc.binary {
				t.Fatalf("entrypoint %q, want [/usr/local/bin/%s]", entry, tc.binary)
			}
			s := sandbox{image: img}
			r := s.run(t, time.Minute, entry[0], "--version")
			if v, ok := strings.CutPrefix(strings.TrimSpace(r.stdout), tc.binary+" "); r.exit != 0 || !ok || v == "" || strings.ContainsAny(v, " \n") {
				t.Errorf("--version: exit %d (%v):\n%s%s", r.exit, r.err, r.stdout, r.stderr)
			}
			r = s.run(t, time.Minute, append([]string{entry[0]}, tc.bad...)...)
			if r.exit != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("%q: exit %d, want 1 and %q:\n%s%s", tc.bad, r.exit, tc.want, r.stdout, r.stderr)
			}
		})
	}
}

// TestInputRelayBinary runs the input relay the way the Bluetooth pod's
// input-relay sidecar does, from the operator's image: --help prints its
// flags, and with no relay volume mounted (the image's root is read-only)
// it refuses to start, naming the state directory it cannot write.
func TestInputRelayBinary(t *testing.T) {
	img := unpack(t, "bluetooth-operator")
	s := sandbox{image: img}
	const entry = "/usr/local/bin/bluetooth-input-relay"
	r := s.run(t, time.Minute, entry, "--help")
	if r.exit != 0 || !strings.Contains(r.stderr, "-socket") || !strings.Contains(r.stderr, "-state") {
		t.Errorf("--help: exit %d (%v), want 0 and the usage naming -socket and -state:\n%s%s", r.exit, r.err, r.stdout, r.stderr)
	}
	r = s.run(t, time.Minute, entry)
	if r.exit != 1 || !strings.Contains(r.stderr, "state directory /var/run/bluetooth.liken.sh/relay cannot be written") {
		t.Errorf("without its volume: exit %d (%v), want 1 and a line naming the state directory it cannot write:\n%s%s", r.exit, r.err, r.stdout, r.stderr)
	}
}
