// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"net"
)

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago. All listeners stay open until every port is picked so the
// kernel cannot hand out the same one twice; they are then closed for the
// components to bind. Another process can still take one in between, which
// Start handles by retrying with new ports.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
