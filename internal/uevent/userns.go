// SPDX-License-Identifier: Apache-2.0

package uevent

import (
	"fmt"
	"os"
	"strings"
)

// InInitialUserNamespace reports whether this process runs in the initial
// user namespace. The kernel broadcasts device uevents only to uevent
// sockets of network namespaces that the initial user namespace owns
// (uevent_net_init in lib/kobject_uevent.c); a pod without hostUsers: true
// has its own user namespace owning its network namespace, where Listen
// succeeds and then receives nothing, with no error. A caller should check
// this once and warn.
//
// It reads /proc/self/uid_map: the initial namespace maps the whole uid
// range onto itself ("0 0 4294967295"), and no other namespace can. It
// returns an error when the file cannot be read or parsed.
func InInitialUserNamespace() (bool, error) {
	data, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return false, fmt.Errorf("uevent: read uid map: %w", err)
	}
	return isIdentityUIDMap(string(data))
}

func isIdentityUIDMap(data string) (bool, error) {
	lines := strings.Split(strings.TrimSpace(data), "\n")
	if len(lines) == 0 || lines[0] == "" {
		return false, fmt.Errorf("uevent: uid map is empty")
	}
	for _, line := range lines {
		if len(strings.Fields(line)) != 3 {
			return false, fmt.Errorf("uevent: uid map line %q is not \"inside outside count\"", clip([]byte(line)))
		}
	}
	return len(lines) == 1 && strings.Join(strings.Fields(lines[0]), " ") == "0 0 4294967295", nil
}
