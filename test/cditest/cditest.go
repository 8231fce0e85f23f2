// SPDX-License-Identifier: Apache-2.0

// Package cditest makes the container a runtime would make from a
// prepared claim's CDI devices, for tests and the demo to read what a
// consumer gets.
package cditest

import (
	"fmt"
	"strings"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

// Inject returns an empty OCI spec with the CDI devices ids (fully
// qualified, vendor/class=name) injected from the specs in dir: the CDI
// library's own injection, as containerd and CRI-O do it. A spec that
// does not parse, or a device no spec names, is an error naming it.
func Inject(dir string, ids []string) (*oci.Spec, error) {
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	if err != nil {
		return nil, fmt.Errorf("CDI specs in %s: %w", dir, err)
	}
	spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	if _, err := cache.InjectDevices(spec, ids...); err != nil {
		return nil, fmt.Errorf("inject %v: %w", ids, err)
	}
	return spec, nil
}

// Env is the value of key in env (KEY=value entries, the last one
// winning, as a process's environment does) and how many times key is
// set.
func Env(env []string, key string) (value string, n int) {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, key+"="); ok {
			value, n = v, n+1
		}
	}
	return value, n
}
