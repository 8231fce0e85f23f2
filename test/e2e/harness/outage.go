// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/client-go/rest"
)

// StopAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after the
// grace) and leaves etcd, the scheduler and the controller manager
// running: every client then gets "connection refused" on the API
// server's port, as during an upgrade or a crash of the control plane.
// It is an error when no API server is running.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	i := slices.IndexFunc(c.procs, func(p *process) bool { return p.name == "kube-apiserver" })
	if i < 0 {
		c.mu.Unlock()
		return errors.New("harness: no kube-apiserver is running")
	}
	p := c.procs[i]
	c.procs = slices.Delete(c.procs, i, i+1)
	c.mu.Unlock()
	p.StopWithin(stopGrace)
	// The next start truncates kube-apiserver.log; keep this one's.
	_ = os.Rename(p.LogPath, filepath.Join(c.dir, fmt.Sprintf("kube-apiserver.stopped-%d.log", p.Pid())))
	return nil
}

// StartAPIServer starts kube-apiserver again with the flags and port of
// the first start, over the same etcd, and waits until /readyz answers.
// It is an error when one is already running.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	running := slices.ContainsFunc(c.procs, func(p *process) bool { return p.name == "kube-apiserver" })
	c.mu.Unlock()
	if running {
		return errors.New("harness: kube-apiserver is already running")
	}
	api, err := c.run("kube-apiserver", c.apiserverArgs())
	if err != nil {
		return err
	}
	httpClient, err := rest.HTTPClientFor(c.restConfig)
	if err != nil {
		return err
	}
	return waitHealthy(ctx, api, httpClient, c.restConfig.Host+"/readyz", c.opts.ComponentTimeout)
}
