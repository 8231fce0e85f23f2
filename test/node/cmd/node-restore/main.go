// SPDX-License-Identifier: Apache-2.0

// Command node-restore is the kubelet tier's last word on the host: when
// a node run left its record of the host behind (package node removes it
// only once it has restored everything and found nothing different), the
// run did not clean up, because it was killed or its restore failed. The
// command then restores the host from that record, prints what was left,
// and exits 1. With no record it checks that no process of a node run is
// alive and exits 0.
//
// Usage: node-restore BIN_DIR
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/liken-sh/operators/test/node"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: node-restore BIN_DIR")
		os.Exit(2)
	}
	record := node.HostRecord()
	h, err := node.LoadHost(record)
	if errors.Is(err, fs.ErrNotExist) {
		h, err = node.Snapshot(os.Args[1])
		if err != nil {
			fail(err)
		}
		// A snapshot of the host as it is differs from itself only in the
		// processes a run left.
		diff, err := h.Diff()
		if err != nil {
			fail(err)
		}
		if len(diff) > 0 {
			fmt.Fprintf(os.Stderr, "node-restore: left behind by the kubelet tier:\n  %s\n", strings.Join(diff, "\n  "))
			if err := h.Restore(); err != nil {
				fail(err)
			}
			os.Exit(1)
		}
		fmt.Println("node-restore: the kubelet tier left nothing behind")
		return
	}
	if err != nil {
		fail(err)
	}
	diff, err := h.Diff()
	if err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "node-restore: the kubelet tier ended without restoring the host; left behind:\n  %s\n", strings.Join(diff, "\n  "))
	if err := node.Recover(record); err != nil {
		fail(err)
	}
	fmt.Fprintln(os.Stderr, "node-restore: host restored from", record)
	os.Exit(1)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "node-restore: %v\n", err)
	os.Exit(1)
}
