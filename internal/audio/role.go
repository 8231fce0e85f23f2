// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"fmt"
	"strings"

	"github.com/liken-sh/operators/internal/audio/gate"
)

// validateShare refuses a volume outside 0 to 100 and a role that is
// not one of gate.RoleNames, naming the ones there are.
func validateShare(volume *int, role string) error {
	if volume != nil && (*volume < 0 || *volume > 100) {
		return fmt.Errorf("volume %d is outside 0 to 100 (percent of unity, the gain of the claim's own streams)", *volume)
	}
	if role == "" {
		return nil
	}
	if _, ok := gate.MediaRole(role); !ok {
		shown := role
		if len(shown) > 32 {
			shown = shown[:32] + "..."
		}
		return fmt.Errorf("role %q is not one of %s", shown, strings.Join(gate.RoleNames(), ", "))
	}
	return nil
}
