// SPDX-License-Identifier: Apache-2.0

package audiocli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Bad input is refused before any cluster is reached, and a long value is
// quoted cut short.
func TestCaptureRefusesBadInputLocally(t *testing.T) {
	long := strings.Repeat("A", 10000)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"capture", ""}, "name is empty"},
		{[]string{"capture", "x", "--format", long}, "(10000 bytes)"},
		{[]string{"capture", "x", "-t", long}, "(10000 bytes)"},
		{[]string{"--api-address", "https://127.0.0.1:8443", "capture", "x"}, `--api-address "https://127.0.0.1:8443" is not host:port`},
		{[]string{"--api-address", "127.0.0.1", "capture", "x"}, "missing port"},
		{[]string{"--api-address", "127.0.0.1:8443/v1", "list"}, "nothing else"},
		{[]string{"--api-address", "127.0.0.1:0", "capture", "x"}, "1 to 65535"},
		{[]string{"--api-address", ":8443", "capture", "x"}, "give a host and a port"},
		// An explicitly empty flag is refused, naming it, as -o "" is.
		{[]string{"capture", "x", "-t", ""}, `error: -t "": the span is empty; leave -t out to capture until Ctrl-C`},
		{[]string{"capture", "x", "--time="}, `error: -t "": the span is empty`},
		{[]string{"capture", "x", "-o", ""}, `error: -o "": the path is empty`},
		{[]string{"--api-address", "", "capture", "x"}, `error: --api-address "": the address is empty`},
		// A span that could hold no sample is refused by its length.
		{[]string{"capture", "x", "-t", "0,0.00001"}, "error: -t 0,0.00001: the span lasts 10µs, shorter than the minimum 1ms: it could hold no sample"},
		{[]string{"capture", "x", "-t", "30,30.000999999"}, "-t 30,30.000999999: the span lasts 999.999µs, shorter than the minimum 1ms"},
	} {
		var out, errOut bytes.Buffer
		code := Execute(context.Background(), "test", genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
			append([]string{"--kubeconfig", "/nonexistent"}, tc.args...))
		if code != 1 || !strings.Contains(errOut.String(), tc.want) || errOut.Len() > 300 {
			t.Errorf("%q: exit %d, %d bytes %q; want 1 and a short message with %q", tc.args[:2], code, errOut.Len(), errOut.String(), tc.want)
		}
	}
}

// The shortest span allowed, and an open-ended one, pass the flag checks
// and go on to the cluster (here a kubeconfig that does not exist).
func TestCaptureTakesAMillisecondSpan(t *testing.T) {
	for _, span := range []string{"0,0.001", "5,5.001", "5", ",1"} {
		var out, errOut bytes.Buffer
		code := Execute(context.Background(), "test", genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
			[]string{"--kubeconfig", "/nonexistent", "capture", "x", "-t", span, "-o", "/dev/null"})
		if code != 1 || !strings.Contains(errOut.String(), "/nonexistent") || strings.Contains(errOut.String(), "-t") {
			t.Errorf("-t %s: exit %d, %q; want it past the flag checks, to the missing kubeconfig", span, code, errOut.String())
		}
	}
}

// The help says that an empty -t or -o is refused, and the shortest span.
func TestCaptureHelpSaysEmptyFlagsAreRefused(t *testing.T) {
	var out bytes.Buffer
	Execute(context.Background(), "test", genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, []string{"capture", "--help"})
	for _, want := range []string{`-t and -o given empty (-t "", -o "") are errors`, "shorter\nthan 1ms", "at least 1ms long"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("capture --help lacks %q:\n%s", want, out.String())
		}
	}
}
