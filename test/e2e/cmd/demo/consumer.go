// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path"
	"strings"
	"time"

	oci "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/liken-sh/operators/test/cditest"
	"github.com/liken-sh/operators/test/pwtest"
)

// sceneRate is the rate, in Hz, at which the scenes that play through
// a claim play and record.
const sceneRate = 48000

// container is what a container holding a prepared audio claim gets:
// the OCI spec the CDI library makes of the claim's CDI devices, as
// containerd does.
type container struct {
	spec *oci.Spec
}

// containerOf injects the CDI devices ids from the specs in cdiDir.
func containerOf(cdiDir string, ids []string) (container, error) {
	spec, err := cditest.Inject(cdiDir, ids)
	if err != nil {
		return container{}, err
	}
	return container{spec: spec}, nil
}

// env is the container's value of key ("" when unset).
func (ct container) env(key string) string {
	v, _ := cditest.Env(ct.spec.Process.Env, key)
	return v
}

// hostPath is where the container's path p is on this host, through
// the mount that holds it; ok is false when no mount does.
func (ct container) hostPath(p string) (string, bool) {
	for _, m := range ct.spec.Mounts {
		if rest, ok := strings.CutPrefix(p, m.Destination+"/"); ok {
			return path.Join(m.Source, rest), true
		}
	}
	return "", false
}

// command is name run as a process of the container on this host, with
// PipeWire's tools from pw: the container's environment, its
// PIPEWIRE_REMOTE turned into the host path of the socket its mount
// binds. A PIPEWIRE_REMOTE that no mount holds is an error.
func (ct container) command(ctx context.Context, pw *pwtest.Daemons, name string, args ...string) (*exec.Cmd, error) {
	remote := ct.env("PIPEWIRE_REMOTE")
	host, ok := ct.hostPath(remote)
	if !ok {
		return nil, fmt.Errorf("PIPEWIRE_REMOTE %q is in no mount of the container", remote)
	}
	cmd := pw.Command(ctx, name, args...)
	cmd.Env = append(append(cmd.Env, ct.spec.Process.Env...), "PIPEWIRE_REMOTE="+host)
	return cmd, nil
}

// linked waits, for at most 30 s, until the stream process pid made is
// linked in PipeWire's graph.
func linked(ctx context.Context, pw *pwtest.Daemons, pid int, what string) error {
	var last error
	if err := until(ctx, 30*time.Second, func() bool {
		_, _, ok, err := pw.LinkedStream(ctx, pid)
		last = err
		return ok
	}); err != nil {
		return fmt.Errorf("%s was not linked: %w (last: %v)", what, err, last)
	}
	return nil
}

// runCaptured runs cmd and returns an error with its output when it
// fails.
func runCaptured(cmd *exec.Cmd) error {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", cmd.Args[0], err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}
