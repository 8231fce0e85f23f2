// SPDX-License-Identifier: Apache-2.0

package docs

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// README and developing.md say what hack/test.sh leaves on the machine:
// where the kubelet tier writes the images it builds on every run, and
// the toolchain fuzzing runs on. Each must be what the scripts use.
func TestDocsNameWhatTheTestsLeave(t *testing.T) {
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	readme, developing := read("../README.md"), read("developing.md")
	images := regexp.MustCompile(`LIKEN_IMAGES:-\$PWD/([^}"]+)`).FindStringSubmatch(read("../hack/kubelet-test.sh"))
	fuzz := regexp.MustCompile(`LIKEN_FUZZ_TOOLCHAIN:-([^}"]+)`).FindStringSubmatch(read("../hack/env.sh"))
	if images == nil || fuzz == nil {
		t.Fatalf("hack/kubelet-test.sh's image directory %v or hack/env.sh's fuzz toolchain %v not found", images, fuzz)
	}
	for _, c := range []struct{ doc, name, text, want string }{
		{readme, "README.md", "the kubelet tier's image directory", "`" + images[1] + "`"},
		{developing, "docs/developing.md", "the kubelet tier's image directory", "`" + images[1] + "`"},
		{readme, "README.md", "the fuzz toolchain", fuzz[1]},
	} {
		if !strings.Contains(c.doc, c.want) {
			t.Errorf("%s does not name %s, %s", c.name, c.text, c.want)
		}
	}
}
