// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Options configures [Start]. The zero value starts all four components in
// a fresh temporary directory, with binaries found as described on Start.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-scheduler and
	// kube-controller-manager. Empty means $LIKEN_CONTROL_PLANE_BIN, and
	// when that is empty too, the directory hack/build-control-plane.sh
	// prints (building the binaries first if its cache lacks them).
	BinDir string
	// Dir is the work directory for certificates, the kubeconfig, etcd's
	// data and one log file per component (<component>.log). It is created
	// if missing and never removed. Empty means a new directory under
	// os.TempDir, removed by Stop.
	Dir string
	// KeepDir keeps a temporary work directory after Stop, for reading the
	// logs. A temporary directory is always kept when Start fails.
	KeepDir bool
	// WithoutScheduler leaves kube-scheduler out: nothing binds pods or
	// allocates claims.
	WithoutScheduler bool
	// WithoutControllerManager leaves kube-controller-manager out. No
	// controller then creates the "default" ServiceAccount, so the API
	// server's ServiceAccount admission plugin is disabled too, or no pod
	// could be created.
	WithoutControllerManager bool
	// ComponentTimeout bounds how long each component may take to become
	// healthy. Zero means 90 seconds.
	ComponentTimeout time.Duration
	// Logf, if set, receives progress lines (t.Logf fits).
	Logf func(format string, args ...any)
	// FeatureGates, when set, is the --feature-gates value of the API
	// server, the scheduler and the controller manager
	// ("DRAConsumableCapacity=false"): a cluster of an older release, or
	// one that turned a beta feature off.
	FeatureGates string
	// AuditLog has the API server record every request, at the Metadata
	// level (verb, resource, user, user agent, response code), as JSON
	// lines in Cluster.AuditLogPath.
	AuditLog bool
}

// Cluster is a running control plane. Its methods are safe for concurrent
// use.
type Cluster struct {
	opts   Options
	logf   func(string, ...any)
	binDir string
	dir    string
	ownDir bool
	pki    *pki
	ports  portSet

	kubeconfig string
	restConfig *rest.Config
	client     kubernetes.Interface
	readyIn    time.Duration

	mu       sync.Mutex
	procs    []*process // in start order
	stopOnce sync.Once
}

// portSet is the one set of loopback ports a cluster binds.
type portSet struct {
	etcdClient, etcdPeer, apiserver, scheduler, controllerManager int
}

// portAttempts bounds retries when another process grabs a port between
// freePorts choosing it and a component binding it.
const portAttempts = 3

// Start runs a control plane and returns once every component reports
// healthy: etcd's /health, the API server's /readyz (and the "default"
// namespace exists), then the scheduler's and controller manager's
// /healthz. ctx bounds only the start-up; the processes run until
// [Cluster.Stop], or until this process dies, since every child is bound to
// it with Pdeathsig.
//
// Binaries: Options.BinDir, else $LIKEN_CONTROL_PLANE_BIN, else
// hack/build-control-plane.sh, found from the working directory by walking
// up to this module's go.mod (see [ModuleRoot]).
//
// On failure every started process is stopped and the error names the
// component; for a component that failed, it is a *[ComponentError] with
// the last 20 lines of its log.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if opts.ComponentTimeout == 0 {
		opts.ComponentTimeout = 90 * time.Second
	}
	binDir, err := findBinDir(ctx, opts.BinDir, logf)
	if err != nil {
		return nil, err
	}
	begin := time.Now()
	c := &Cluster{opts: opts, logf: logf, binDir: binDir, dir: opts.Dir}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "liken-e2e-"); err != nil {
			return nil, err
		}
		c.ownDir = true
	} else if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, err
	}
	if c.pki, err = newPKI(c.dir); err != nil {
		return nil, fmt.Errorf("harness: certificates: %w", err)
	}
	for attempt := 1; ; attempt++ {
		err = c.launch(ctx)
		if err == nil {
			break
		}
		conflict := c.portConflict()
		c.stopProcesses()
		if !conflict || attempt == portAttempts {
			return nil, fmt.Errorf("%w\n(work directory kept: %s)", err, c.dir)
		}
		logf("harness: a port was taken, retrying with new ones: %v", err)
	}
	c.readyIn = time.Since(begin)
	logf("harness: control plane ready in %s at %s (work dir %s)", c.readyIn.Round(time.Millisecond), c.restConfig.Host, c.dir)
	return c, nil
}

// launch picks ports and starts the components in dependency order.
func (c *Cluster) launch(ctx context.Context) error {
	p, err := freePorts(5)
	if err != nil {
		return err
	}
	c.ports = portSet{p[0], p[1], p[2], p[3], p[4]}
	c.restConfig = c.newRESTConfig()
	if c.kubeconfig, err = c.writeKubeconfig(); err != nil {
		return err
	}
	// A retry must not find the half-initialised data of a failed etcd.
	if err := os.RemoveAll(filepath.Join(c.dir, "etcd")); err != nil {
		return err
	}
	timeout := c.opts.ComponentTimeout

	etcd, err := c.run("etcd", c.etcdArgs())
	if err != nil {
		return err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d/health", c.ports.etcdClient)
	if err := waitHealthy(ctx, etcd, &http.Client{Timeout: 2 * time.Second}, etcdURL, timeout); err != nil {
		return err
	}

	if c.opts.AuditLog {
		if err := c.writeAuditPolicy(); err != nil {
			return err
		}
	}
	api, err := c.run("kube-apiserver", c.apiserverArgs())
	if err != nil {
		return err
	}
	httpClient, err := rest.HTTPClientFor(c.restConfig)
	if err != nil {
		return err
	}
	if err := waitHealthy(ctx, api, httpClient, c.restConfig.Host+"/readyz", timeout); err != nil {
		return err
	}
	if c.client, err = kubernetes.NewForConfig(c.restConfig); err != nil {
		return err
	}
	if err := c.waitDefaultNamespace(ctx, api, timeout); err != nil {
		return err
	}

	// The scheduler and controller manager only need the API server, so
	// they start together and are waited for one after the other.
	type waiter struct {
		p   *process
		url string
	}
	var waits []waiter
	if !c.opts.WithoutScheduler {
		s, err := c.run("kube-scheduler", c.schedulerArgs())
		if err != nil {
			return err
		}
		waits = append(waits, waiter{s, fmt.Sprintf("https://127.0.0.1:%d/healthz", c.ports.scheduler)})
	}
	if !c.opts.WithoutControllerManager {
		m, err := c.run("kube-controller-manager", c.controllerManagerArgs())
		if err != nil {
			return err
		}
		waits = append(waits, waiter{m, fmt.Sprintf("https://127.0.0.1:%d/healthz", c.ports.controllerManager)})
	}
	for _, w := range waits {
		if err := waitHealthy(ctx, w.p, insecureClient(), w.url, timeout); err != nil {
			return err
		}
	}
	return nil
}

// waitDefaultNamespace waits for the API server's bootstrap controller to
// create "default"; /readyz can answer before it has.
func (c *Cluster) waitDefaultNamespace(ctx context.Context, api *process, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if _, err := c.client.CoreV1().Namespaces().Get(ctx, "default", getOpts); err == nil {
			return nil
		}
		select {
		case <-api.Done():
			return api.componentError(fmt.Errorf("%w: %v", errExited, api.Err()))
		case <-ctx.Done():
			return api.componentError(errors.New(`namespace "default" never appeared`))
		case <-time.After(pollInterval):
		}
	}
}

// run starts one component and records it for Stop.
func (c *Cluster) run(name string, args []string) (*process, error) {
	p, err := startProcess(c.dir, name, filepath.Join(c.binDir, name), args)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p, nil
}

// portConflict reports whether a component failed because its port was
// taken, the one failure a retry with new ports can fix.
func (c *Cluster) portConflict() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		if p.logContains("address already in use") {
			return true
		}
	}
	return false
}
