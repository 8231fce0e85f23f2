// SPDX-License-Identifier: Apache-2.0

//go:build hcisim

package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/hci"
	"github.com/liken-sh/operators/internal/hci/hcitest"
)

// A build with the hcisim tag answers HCIGETDEVINFO from $BONDFETCH_HCISIM
// (hciN=ADDRESS) instead of the kernel, for the kubelet tier, whose
// kernel has no AF_BLUETOOTH: everything else bondfetch does (the
// Secrets, BlueZ's tree, the pod's identity and volumes) is the real
// thing. The images the bases ship are never built with it.
func init() {
	openKernel = func() (hci.Kernel, func() error, error) {
		spec := os.Getenv("BONDFETCH_HCISIM")
		name, address, ok := strings.Cut(spec, "=")
		var id uint16
		if _, err := fmt.Sscanf(name, "hci%d", &id); !ok || err != nil {
			return nil, nil, fmt.Errorf("hcisim build: BONDFETCH_HCISIM %q is not hciN=ADDRESS", spec)
		}
		addr, err := bdaddr.Parse(address)
		if err != nil {
			return nil, nil, fmt.Errorf("hcisim build: BONDFETCH_HCISIM: %w", err)
		}
		k := hcitest.NewKernel()
		k.Script(id, hcitest.Answer{Info: hci.DevInfo{ID: id, Name: name, Address: addr, Flags: 1, Type: 1}})
		return k, func() error { return nil }, nil
	}
}
