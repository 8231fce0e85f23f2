// SPDX-License-Identifier: Apache-2.0

// Package report is what the kubelet tier's consumer prints about its own
// container, and the test reads back from the pod's log.
package report

// Report is one line of the consumer's log, "report " and this as JSON.
type Report struct {
	// Env is the container's environment.
	Env map[string]string `json:"env"`
	// Dev holds every path under /dev: "c MAJ:MIN", "b MAJ:MIN", "d",
	// "l TARGET" or "f".
	Dev map[string]string `json:"dev"`
	// Mounts are the container's mount points (/proc/self/mountinfo).
	Mounts []string `json:"mounts"`
}
