// SPDX-License-Identifier: Apache-2.0

// Command noambient empties the ambient capability set and execs its
// arguments, keeping its PID. bubblewrap raises every capability it is
// told to keep (--cap-add) into the ambient set, which a container runtime
// does not: Kubernetes sets the bounding, effective and permitted sets
// only. Debian's dbus-daemon drops to its user through libcap-ng, which
// re-raises the ambient capabilities it found after dropping the permitted
// ones and fails with EPERM, so the image tests run this first to give the
// program the capabilities a pod gives it, and no others.
//
// Capabilities belong to a thread, not a process (capabilities(7)):
// PR_CAP_AMBIENT_CLEAR_ALL empties the calling thread's ambient set only,
// and execve(2) gives the new program the credentials of the thread that
// calls it. The goroutine is therefore locked to one thread for both;
// without that, the Go scheduler may move it between them (it does under
// load), and the program starts with bubblewrap's ambient set after all.
package main

import (
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

func main() {
	// Never unlocked: the thread is replaced by the program it execs.
	runtime.LockOSThread()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: noambient PROGRAM [ARG...]")
		os.Exit(2)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "noambient: clear the ambient set: %v\n", err)
		os.Exit(1)
	}
	err := syscall.Exec(os.Args[1], os.Args[1:], os.Environ())
	fmt.Fprintf(os.Stderr, "noambient: exec %s: %v\n", os.Args[1], err)
	os.Exit(1)
}
