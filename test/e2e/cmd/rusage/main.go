// SPDX-License-Identifier: Apache-2.0

// Command rusage runs a program and reports what it cost, for benchmarks
// that measure a short-lived process as a whole:
//
//	rusage -o FILE PROGRAM [ARG...]
//
// It runs PROGRAM with this environment and standard streams, waits for
// it, writes "<cpu-ns> <maxrss-kB>" to FILE (user plus system CPU time,
// and the largest resident set, of the program and every child it waited
// for, from wait4(2)'s rusage) and exits with the program's status.
//
// Why a process of its own: the kernel starts a new program's maxrss at
// the resident set of the process that executed it (exec records the
// replaced address space's high-water mark, getrusage(2)), so a program
// started straight from a large test binary reports that binary's size.
// This one is a few MiB, which is the floor of every figure it gives.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	out := flag.String("o", "", "file to write \"<cpu-ns> <maxrss-kB>\" to")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: rusage -o FILE PROGRAM [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintln(os.Stderr, "rusage:", err)
		os.Exit(2)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := ru.Utime.Nano() + ru.Stime.Nano()
	if err := os.WriteFile(*out, fmt.Appendf(nil, "%d %d\n", cpu, ru.Maxrss), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "rusage:", err)
		os.Exit(2)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}
