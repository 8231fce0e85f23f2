// SPDX-License-Identifier: Apache-2.0

// Package supervise runs one daemon as the child of a container's first
// process: it starts the daemon with the given environment, forwards the
// termination signals the container receives, replaces the daemon in place
// when a caller-defined condition says it is stale, may start it again
// after it exits on its own, and otherwise ends with the daemon's exit
// status, so that the container's status is the daemon's.
//
// Why a first process at all: the audio operator's PipeWire and
// WirePlumber sidecars must restart their daemon without the container
// ending, because a container exit waits in the kubelet's crash backoff
// (10 s doubling to 5 min) and every sink on the machine is silent for that
// wait. Only a parent that outlives the daemon can do that, and it must be
// transparent otherwise: the signals reach the daemon, the status comes
// back out.
//
// The exit status follows the shell's convention: the daemon's own exit
// code, or 128 plus the signal number when a signal killed it (143 for
// SIGTERM, 137 for SIGKILL). A daemon that cannot be started at all gives
// status 1.
package supervise
