// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"fmt"
	"regexp"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
)

// The spec's patterns, as the CRD's schema states them.
var (
	adapterRE = regexp.MustCompile(`^([0-9a-f]{2}-){5}[0-9a-f]{2}$`)
	deviceRE  = regexp.MustCompile(`^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$`)
	pinRE     = regexp.MustCompile(`^[ -~]{1,16}$`)
)

// ValidateSpec checks a PairingRequest's spec as the CRD's schema does,
// for an API server that serves the CRD without it (an old copy, a hand
// edit): the operator never opens a window nor pairs on a spec the schema
// would refuse. A zero windowSeconds or an absent TTL means the default.
// The error names the first field that is wrong and says why.
func ValidateSpec(s btv1.PairingRequestSpec) error {
	switch {
	case !adapterRE.MatchString(s.Adapter):
		return fmt.Errorf("spec.adapter %.40q is not an adapter name (its address in lowercase with dashes, 00-1a-7d-da-71-13)", s.Adapter)
	case s.WindowSeconds != 0 && (s.WindowSeconds < btv1.MinWindowSeconds || s.WindowSeconds > btv1.MaxWindowSeconds):
		return fmt.Errorf("spec.windowSeconds %d is outside %d to %d", s.WindowSeconds, btv1.MinWindowSeconds, btv1.MaxWindowSeconds)
	case s.Device != "" && !deviceRE.MatchString(s.Device):
		return fmt.Errorf("spec.device %.40q is not a Bluetooth address (XX:XX:XX:XX:XX:XX)", s.Device)
	case s.PIN != "" && !pinRE.MatchString(s.PIN):
		return fmt.Errorf("spec.pin must be 1 to 16 printable ASCII characters (got %d bytes)", len(s.PIN))
	case s.TTLSecondsAfterFinished != nil && (*s.TTLSecondsAfterFinished < 0 || *s.TTLSecondsAfterFinished > btv1.MaxTTLSecondsAfterFinished):
		return fmt.Errorf("spec.ttlSecondsAfterFinished %d is outside 0 to %d", *s.TTLSecondsAfterFinished, btv1.MaxTTLSecondsAfterFinished)
	}
	if s.Device != "" {
		if _, err := bdaddr.Parse(s.Device); err != nil {
			return fmt.Errorf("spec.device: %w", err)
		}
	}
	return nil
}
