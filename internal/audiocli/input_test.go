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
	} {
		var out, errOut bytes.Buffer
		code := Execute(context.Background(), "test", genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
			append([]string{"--kubeconfig", "/nonexistent"}, tc.args...))
		if code != 1 || !strings.Contains(errOut.String(), tc.want) || errOut.Len() > 300 {
			t.Errorf("%q: exit %d, %d bytes %q; want 1 and a short message with %q", tc.args[:2], code, errOut.Len(), errOut.String(), tc.want)
		}
	}
}
