// SPDX-License-Identifier: Apache-2.0

package bluetoothcli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// A flag given with an empty value is refused before anything is
// created, rather than read as the flag left out (an empty --device
// would otherwise open an interactive window).
func TestPairRefusesAnEmptyFlag(t *testing.T) {
	for _, flag := range []string{"--device", "--adapter", "--node", "--pin"} {
		var out, errOut bytes.Buffer
		code := Execute(context.Background(), "test", genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
			[]string{"--kubeconfig", "/nonexistent", "pair", flag, ""})
		if code != 1 || !strings.Contains(errOut.String(), flag+" is empty") {
			t.Errorf("pair %s \"\": exit %d, %q; want 1 and the flag named", flag, code, errOut.String())
		}
	}
}

// Help names the command as kubectl runs it.
func TestHelpNamesThePlugin(t *testing.T) {
	var out bytes.Buffer
	Execute(context.Background(), "test", genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, []string{"pair", "--help"})
	if !strings.Contains(out.String(), "kubectl liken bluetooth pair") {
		t.Errorf("pair --help says:\n%s\nwant the usage line kubectl liken bluetooth pair", out.String())
	}
}

// $KUBECONFIG naming a file that does not exist is said so, rather than
// ending in a dial of localhost:8080.
func TestMissingKubeconfigIsNamed(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	for _, args := range [][]string{{"list"}, {"unpair", "aa-bb-cc-dd-ee-ff"}} {
		var out, errOut bytes.Buffer
		code := Execute(context.Background(), "test", genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
		if code != 1 || !strings.Contains(errOut.String(), "KUBECONFIG names /nonexistent, which does not exist") || strings.Contains(errOut.String(), "localhost") {
			t.Errorf("%v: exit %d, %q; want 1 and the missing file named", args, code, errOut.String())
		}
	}
}
