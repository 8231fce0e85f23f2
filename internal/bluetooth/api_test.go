// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/liken-sh/operators/internal/dra"
)

var (
	cIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	dnsLabel    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// checkAPIDevice checks what resource.k8s.io/v1 validation would refuse in
// a published device: a device name that is no DNS label, attribute names
// that are no C identifier of at most 32 characters, more than 32
// attributes, an attribute without exactly one value, an empty or
// over-long string; and, this driver's own rule, a flag published false.
func checkAPIDevice(d dra.Device) error {
	if len(d.Name) > 63 || !dnsLabel.MatchString(d.Name) {
		return fmt.Errorf("device name %q is not a DNS label", d.Name)
	}
	if len(d.Attributes) > 32 {
		return fmt.Errorf("%s: %d attributes, at most 32", d.Name, len(d.Attributes))
	}
	for k, v := range d.Attributes {
		id := string(k)
		if i := strings.LastIndexByte(id, '/'); i >= 0 {
			if !strings.HasSuffix(id[:i], "liken.sh") {
				return fmt.Errorf("%s: attribute %q has an unexpected domain", d.Name, k)
			}
			id = id[i+1:]
		}
		if len(id) > 32 || !cIdentifier.MatchString(id) {
			return fmt.Errorf("%s: attribute name %q is not a C identifier of at most 32 characters", d.Name, k)
		}
		set := 0
		if v.StringValue != nil {
			set++
			s := *v.StringValue
			if s == "" || len(s) > 64 || !utf8.ValidString(s) || strings.TrimSpace(s) != s {
				return fmt.Errorf("%s: attribute %s = %q is empty, too long, not UTF-8 or padded", d.Name, k, s)
			}
		}
		if v.IntValue != nil {
			set++
		}
		if v.BoolValue != nil {
			set++
			if !*v.BoolValue && k != "connected" {
				return fmt.Errorf("%s: flag %s published false", d.Name, k)
			}
		}
		if v.VersionValue != nil {
			set++
		}
		if set != 1 {
			return fmt.Errorf("%s: attribute %s has %d values", d.Name, k, set)
		}
	}
	for _, t := range d.Taints {
		if !strings.HasPrefix(t.Key, DriverName+"/") {
			return fmt.Errorf("%s: taint %q outside the driver's domain", d.Name, t.Key)
		}
	}
	return nil
}
