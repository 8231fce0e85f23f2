// SPDX-License-Identifier: Apache-2.0

// Command audio-operator is the entrypoint of the audio image
// (deploy/audio/operator.yaml names it in every container); its first
// argument selects the mode:
//
//	audio-operator                         the operator (DRA driver audio.liken.sh)     executes audio-driver
//	audio-operator declare                 init container: PipeWire and WirePlumber drop-ins  executes audio-driver
//	audio-operator api                     audio-api, the capture API's HTTPS entry           executes audio-driver
//	audio-operator capture                 the capture container                              executes audio-capture
//	audio-operator pipewire                sidecar: PipeWire, restarted in place on a new declaration
//	audio-operator wireplumber [args]      sidecar: WirePlumber, following PipeWire's restarts
//	audio-operator graph-answers           PipeWire's startup probe
//	audio-operator endpoints-registered    WirePlumber's probes
//
// The last four talk to no API server and run in this process. This
// program links none of client-go, so a probe the kubelet runs every few
// seconds, and each sidecar's supervising process, costs a few MiB and a
// few milliseconds rather than the Kubernetes clientset's package
// initialisation (every API group's scheme and protobuf registrations,
// 40-odd MiB resident and tens of ms of CPU before main). The other modes
// replace this process (execve: same pid, arguments, environment) with
// the binary beside this one that holds them.
//
// Flags placed before the mode (tests move host paths that way) are
// audio-driver's: with any, this program executes audio-driver with the
// whole command line, and audio-driver runs the mode it names.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/liken-sh/operators/internal/audio/modes"
)

// The binaries the image installs beside this one (internal/images).
const (
	driverBinary  = "audio-driver"
	captureBinary = "audio-capture"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 {
		if run, ok := modes.ByName[args[0]]; ok {
			os.Exit(run(context.Background(), args[1:], modes.ProcessEnv()))
		}
		if args[0] == "capture" {
			fail(execBeside(captureBinary, args[1:]))
		}
	}
	fail(execBeside(driverBinary, args))
}

// execBeside replaces this process with the binary name in this binary's
// own directory, giving it args and this environment. It returns only on
// failure: the binary is not there, or execve refused it.
func execBeside(name string, args []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("where this binary is: %w", err)
	}
	bin := filepath.Join(filepath.Dir(self), name)
	if err := syscall.Exec(bin, append([]string{bin}, args...), os.Environ()); err != nil {
		return fmt.Errorf("exec %s: %w", bin, err)
	}
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "audio-operator:", err)
	os.Exit(1)
}
