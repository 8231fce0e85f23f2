package bluetoothcli

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestVersionAndCompletion(t *testing.T) {
	var out bytes.Buffer
	streams := genericiooptions.IOStreams{Out: &out, ErrOut: &out}
	if code := Execute(t.Context(), "v1.2.3", streams, []string{"--version"}); code != 0 || out.String() != "kubectl-liken-bluetooth v1.2.3\n" {
		t.Errorf("--version: %d %q", code, out.String())
	}
	out.Reset()
	if code := Execute(t.Context(), "dev", streams, []string{"completion", "bash"}); code != 0 || !strings.Contains(out.String(), "bash completion") {
		t.Errorf("completion bash: %d %.80q", code, out.String())
	}
	out.Reset()
	if code := Execute(t.Context(), "dev", streams, []string{"pair", "--device", "gamepad", "--adapter", "00-1a-7d-da-71-13", "--server", "https://127.0.0.1:1"}); code != 1 ||
		!strings.Contains(out.String(), `--device "gamepad" is not a Bluetooth address`) {
		t.Errorf("pair --device gamepad: %d %q", code, out.String())
	}
	out.Reset()
	if code := Execute(t.Context(), "dev", streams, []string{"pair", "--window", "8760h", "--server", "https://127.0.0.1:1"}); code != 1 ||
		!strings.Contains(out.String(), "--window 8760h0m0s is outside 15s to 900s") {
		t.Errorf("pair --window a year: %d %q", code, out.String())
	}
}
