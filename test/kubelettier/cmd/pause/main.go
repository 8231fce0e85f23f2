// SPDX-License-Identifier: Apache-2.0

// Command pause is the kubelet tier's pod sandbox image (containerd's
// pinned sandbox image): PID 1 of every pod's sandbox, which holds the
// pod's namespaces, reaps what is re-parented to it, and exits 0 on
// SIGTERM or SIGINT. Nothing can be pulled on the tier's machines, so the
// sandbox image is built here like every other image.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
