// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"fmt"
	"regexp"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
)

// pinRE is spec.pin's pattern, as the CRD's schema states it. The
// schema takes spec.adapter and spec.device in either of bdaddr's
// spellings, which is what bdaddr.Parse reads.
var pinRE = regexp.MustCompile(`^[ -~]{1,16}$`)

// adapterName is the Adapter that spec.adapter names, in either
// spelling: the address's Key ("00-1a-7d-da-71-13"). A value that is no
// address is returned as it is, so that it names no Adapter.
func adapterName(spec string) string {
	if a, err := bdaddr.Parse(spec); err == nil {
		return a.Key()
	}
	return spec
}

// ValidateSpec checks a PairingRequest's spec as the CRD's schema does,
// for an API server that serves the CRD without it (an old copy, a hand
// edit): the operator never opens a window nor pairs on a spec the schema
// would refuse. A zero windowSeconds or an absent TTL means the default.
// The error names the first field that is wrong and says why.
func ValidateSpec(s btv1.PairingRequestSpec) error {
	_, adapterErr := bdaddr.Parse(s.Adapter)
	_, deviceErr := bdaddr.Parse(s.Device)
	switch {
	case adapterErr != nil:
		return fmt.Errorf("spec.adapter %.40q is not an adapter's address: give its name (00-1a-7d-da-71-13) or its address (00:1A:7D:DA:71:13)", s.Adapter)
	case s.WindowSeconds != 0 && (s.WindowSeconds < btv1.MinWindowSeconds || s.WindowSeconds > btv1.MaxWindowSeconds):
		return fmt.Errorf("spec.windowSeconds %d is outside %d to %d", s.WindowSeconds, btv1.MinWindowSeconds, btv1.MaxWindowSeconds)
	case s.Device != "" && deviceErr != nil:
		return fmt.Errorf("spec.device %.40q is not a Bluetooth address (XX:XX:XX:XX:XX:XX)", s.Device)
	case s.PIN != "" && !pinRE.MatchString(s.PIN):
		return fmt.Errorf("spec.pin must be 1 to 16 printable ASCII characters (got %d bytes)", len(s.PIN))
	case s.TTLSecondsAfterFinished != nil && (*s.TTLSecondsAfterFinished < 0 || *s.TTLSecondsAfterFinished > btv1.MaxTTLSecondsAfterFinished):
		return fmt.Errorf("spec.ttlSecondsAfterFinished %d is outside 0 to %d", *s.TTLSecondsAfterFinished, btv1.MaxTTLSecondsAfterFinished)
	}
	return nil
}
