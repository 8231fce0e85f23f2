// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

var getOpts = metav1.GetOptions{}

// stopGrace is how long each component gets between SIGTERM and SIGKILL.
// The API server drains for a few seconds after SIGTERM.
const stopGrace = 15 * time.Second

// Kubeconfig returns the path of an admin kubeconfig (user CN=admin in
// system:masters) with certificates embedded, inside [Cluster.Dir].
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// RESTConfig returns a new copy of the admin client configuration; callers
// may modify it.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Client returns a shared admin clientset.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Dir returns the work directory: pki/, admin.kubeconfig, etcd/ and one
// <component>.log per component.
func (c *Cluster) Dir() string { return c.dir }

// Host returns the API server's URL, https://127.0.0.1:<port>.
func (c *Cluster) Host() string { return c.restConfig.Host }

// ReadyIn returns how long Start took from having the binaries to every
// component being healthy.
func (c *Cluster) ReadyIn() time.Duration { return c.readyIn }

// Stop stops every component, newest first: SIGTERM, then SIGKILL for any
// still running after 15 seconds. It then removes a temporary work
// directory unless Options.KeepDir is set. It is idempotent, so it can be
// deferred and registered with t.Cleanup at once.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		c.stopProcesses()
		if c.ownDir && !c.opts.KeepDir {
			_ = os.RemoveAll(c.dir)
		}
	})
}

// stopProcesses stops the scheduler and controller manager together, then
// the API server, then etcd, so no component loses its backend while it is
// still running.
func (c *Cluster) stopProcesses() {
	c.mu.Lock()
	procs := c.procs
	c.procs = nil
	c.mu.Unlock()
	var controllers, others []*process
	for _, p := range procs {
		if p.name == "kube-scheduler" || p.name == "kube-controller-manager" {
			controllers = append(controllers, p)
		} else {
			others = append(others, p)
		}
	}
	stop := func(p *process) {
		if p.StopWithin(stopGrace) {
			c.logf("harness: %s ignored SIGTERM for %s and was killed", p.name, stopGrace)
		}
	}
	var wg sync.WaitGroup
	for _, p := range controllers {
		wg.Go(func() { stop(p) })
	}
	wg.Wait()
	for i := len(others) - 1; i >= 0; i-- {
		stop(others[i])
	}
}
