// SPDX-License-Identifier: Apache-2.0

package docs

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/bonds"
)

// README and gamepad.md state the bounds on what bondfetch skips and
// logs: each must be the figure the code uses.
func TestDocsStateTheSkipBounds(t *testing.T) {
	skipped := fmt.Sprintf("at most %d skipped keys in %d KiB", bonds.MaxSkipped, bonds.MaxSkippedBytes>>10)
	names := fmt.Sprintf("at most %d other Secrets", bonds.MaxConflictNames)
	for _, p := range []string{"../README.md", "gamepad.md"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(b)), " ")
		for _, want := range []string{skipped, names, "`and N more keys skipped`"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s does not say %q", p, want)
			}
		}
	}
}
