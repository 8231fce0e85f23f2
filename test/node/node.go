// SPDX-License-Identifier: Apache-2.0

package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/test/child"
	"github.com/liken-sh/operators/test/e2e/harness"
)

// Binaries is what a node runs, in one directory: containerd,
// containerd-shim-runc-v2 (found on containerd's PATH), ctr and kubelet.
var Binaries = []string{"containerd", "containerd-shim-runc-v2", "ctr", "kubelet"}

// EnvBinDir names the directory holding Binaries, as hack/build-kubelet.sh
// prints it.
const EnvBinDir = "LIKEN_NODE_BIN"

// Options configure [Start].
type Options struct {
	// Name is the Node's name, which must resolve to 127.0.0.1: the API
	// server reaches the kubelet by it (a kubelet refuses a loopback
	// --node-ip, and its other addresses are not the loopback). Empty
	// means "localhost".
	Name string
	// BinDir holds Binaries; empty means $LIKEN_NODE_BIN.
	BinDir string
	// Dir is the run's work directory (configuration, containerd's root
	// and state, logs); it must exist.
	Dir string
	// Logf receives progress lines.
	Logf func(format string, args ...any)
}

// Node is containerd and a kubelet running on this machine, joined to a
// harness.Cluster.
type Node struct {
	opts    Options
	cluster *harness.Cluster
	host    *Host
	hostRec string

	socket, kubeconfig, config string

	mu         sync.Mutex
	containerd *child.Process
	kubelet    *child.Process
	kubeletLog string
	starts     int
	stopOnce   sync.Once
}

// HostRecord is where Start saves the host it found, for [Recover]; it is
// removed once Stop has restored the host.
func HostRecord() string {
	cache := os.Getenv("LIKEN_CACHE")
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		cache = filepath.Join(base, "liken")
	}
	return filepath.Join(cache, "node-host.json")
}

// Start restores the host a killed earlier run left behind (see
// [Recover]), records the host, starts containerd and then the kubelet,
// and returns once the Node is Ready. On failure everything started is
// stopped and the host restored.
func Start(ctx context.Context, c *harness.Cluster, opts Options) (*Node, error) {
	if opts.Name == "" {
		opts.Name = "localhost"
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.BinDir == "" {
		opts.BinDir = os.Getenv(EnvBinDir)
	}
	if opts.BinDir == "" {
		return nil, fmt.Errorf("node: no binary directory: set %s (hack/build-kubelet.sh prints it)", EnvBinDir)
	}
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(opts.BinDir, b)); err != nil {
			return nil, fmt.Errorf("node: %w", err)
		}
	}
	if err := Recover(HostRecord()); err != nil {
		return nil, err
	}
	host, err := Snapshot(opts.BinDir)
	if err != nil {
		return nil, err
	}
	if err := host.Save(HostRecord()); err != nil {
		return nil, err
	}
	n := &Node{opts: opts, cluster: c, host: host, hostRec: HostRecord()}
	if err := n.start(ctx); err != nil {
		n.Stop()
		return nil, err
	}
	return n, nil
}

func (n *Node) start(ctx context.Context) error {
	dir := n.opts.Dir
	for _, d := range []string{"containerd", "cni", "pod-logs", "kubelet-pki"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	// containerd's socket path must fit a sun_path; the work directory
	// may be deep, so the sockets live in a short one of their own.
	sockDir, err := os.MkdirTemp("", "ctd")
	if err != nil {
		return err
	}
	n.socket = filepath.Join(sockDir, "containerd.sock")
	cfg := containerdConfig(filepath.Join(dir, "containerd"), sockDir, filepath.Join(dir, "cni"))
	if err := os.WriteFile(filepath.Join(dir, "containerd.toml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "cni", "10-liken-tier.conflist"), []byte(cniConfig(dir)), 0o644); err != nil {
		return err
	}
	if err := n.startContainerd(ctx); err != nil {
		return err
	}

	if n.kubeconfig, err = n.cluster.UserKubeconfig("system:node:"+n.opts.Name, "system:nodes"); err != nil {
		return err
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	n.config = filepath.Join(dir, "kubelet.yaml")
	if err := os.WriteFile(n.config, []byte(kubeletConfig(dir, n.socket, n.cluster.CAFile(), ports[0], ports[1])), 0o644); err != nil {
		return err
	}
	return n.StartKubelet(ctx)
}

// env is the environment of containerd and the kubelet: the binary
// directory first on PATH, so containerd finds its shim.
func (n *Node) env() []string {
	env := []string{"PATH=" + n.opts.BinDir + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return env
}

func (n *Node) startContainerd(ctx context.Context) error {
	p, err := child.Start(filepath.Join(n.opts.Dir, "containerd.log"), n.env(),
		filepath.Join(n.opts.BinDir, "containerd"), "--config", filepath.Join(n.opts.Dir, "containerd.toml"))
	if err != nil {
		return fmt.Errorf("node: start containerd: %w", err)
	}
	n.mu.Lock()
	n.containerd = p
	n.mu.Unlock()
	began := time.Now()
	if err := waitFor(ctx, 60*time.Second, p, func() bool {
		c, err := net.Dial("unix", n.socket)
		if err == nil {
			c.Close()
		}
		return err == nil
	}); err != nil {
		return fmt.Errorf("node: containerd: %w\n%s", err, child.Tail(p.LogPath, 20))
	}
	n.opts.Logf("node: containerd up in %s", time.Since(began).Round(time.Millisecond))
	return nil
}

// StartKubelet starts the kubelet (again, after [Node.StopKubelet]) and
// waits until its Node is Ready.
func (n *Node) StartKubelet(ctx context.Context) error {
	n.mu.Lock()
	if n.kubelet != nil {
		n.mu.Unlock()
		return errors.New("node: the kubelet is running")
	}
	n.mu.Unlock()
	began := time.Now()
	n.starts++
	logName := "kubelet.log"
	if n.starts > 1 {
		logName = fmt.Sprintf("kubelet.%d.log", n.starts)
	}
	n.kubeletLog = filepath.Join(n.opts.Dir, logName)
	p, err := child.Start(n.kubeletLog, n.env(),
		filepath.Join(n.opts.BinDir, "kubelet"),
		"--config="+n.config,
		"--kubeconfig="+n.kubeconfig,
		"--hostname-override="+n.opts.Name,
		"--cert-dir="+filepath.Join(n.opts.Dir, "kubelet-pki"),
		// Processes here cannot lower an oom_score_adj (no
		// CAP_SYS_RESOURCE); the kubelet's default -999 would fail.
		"--oom-score-adj=0",
		// The Node's addresses are set by [Node.ownAddresses], in a
		// cloud controller's place: the kubelet refuses a loopback
		// --node-ip, and would otherwise report eth0's address, which
		// is then every hostNetwork pod's IP, the address its probes
		// and anything dialling a pod IP go to.
		"--cloud-provider=external",
		"--v=2",
	)
	if err != nil {
		return fmt.Errorf("node: start kubelet: %w", err)
	}
	n.mu.Lock()
	n.kubelet = p
	n.mu.Unlock()
	client := n.cluster.Client()
	var last string
	if err := waitFor(ctx, 90*time.Second, p, func() bool {
		node, err := client.CoreV1().Nodes().Get(ctx, n.opts.Name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false
		}
		if done, err := n.ownAddresses(ctx, node); err != nil || !done {
			last = fmt.Sprintf("addresses %v, taints %v: %v", node.Status.Addresses, node.Spec.Taints, err)
			return false
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				last = c.Reason + ": " + c.Message
				// A restarted kubelet must have posted since it started.
				return c.Status == corev1.ConditionTrue && c.LastHeartbeatTime.After(began.Add(-time.Second))
			}
		}
		return false
	}); err != nil {
		return fmt.Errorf("node: kubelet: Node %s not Ready: %w (last: %s)\n%s", n.opts.Name, err, last, child.Tail(p.LogPath, 30))
	}
	n.opts.Logf("node: kubelet started, Node %s Ready in %s", n.opts.Name, time.Since(began).Round(time.Millisecond))
	return nil
}

// uninitializedTaint is the taint a kubelet with --cloud-provider=external
// puts on the Node it registers (k8s.io/cloud-provider/api
// TaintExternalCloudProvider), named here rather than importing that
// module for one constant.
const uninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"

// Addresses are the Node's addresses, as [Node.ownAddresses] sets them:
// its name, and 127.0.0.1 as its InternalIP, so that a hostNetwork pod's
// IP is the loopback its listeners bind.
func (n *Node) Addresses() []corev1.NodeAddress {
	return []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: n.opts.Name}}
}

// ownAddresses does for node what a cloud controller manager does for a
// kubelet started with --cloud-provider=external: it sets the Node's
// addresses (Addresses) and removes the taint that keeps pods off a node
// not yet initialised. A kubelet keeps addresses it finds set, and adds
// the taint only when it registers the Node, so after a restart nothing
// is left to do. It reports whether node was done already.
func (n *Node) ownAddresses(ctx context.Context, node *corev1.Node) (bool, error) {
	client := n.cluster.Client()
	done := true
	if !equality.Semantic.DeepEqual(node.Status.Addresses, n.Addresses()) {
		done = false
		node = node.DeepCopy()
		node.Status.Addresses = n.Addresses()
		var err error
		if node, err = client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			return false, err
		}
	}
	var taints []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Key != uninitializedTaint {
			taints = append(taints, t)
		}
	}
	if len(taints) != len(node.Spec.Taints) {
		done = false
		node = node.DeepCopy()
		node.Spec.Taints = taints
		if _, err := client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return false, err
		}
	}
	return done, nil
}

// StopKubelet stops the kubelet (SIGTERM, then SIGKILL after 15 s); the
// containers it started keep running, as they do on a real node.
func (n *Node) StopKubelet() {
	n.mu.Lock()
	p := n.kubelet
	n.kubelet = nil
	n.mu.Unlock()
	if p != nil {
		p.Stop()
	}
}

// KubeletLog returns the log of the kubelet's latest start: kubelet.log,
// then kubelet.2.log and so on in Dir.
func (n *Node) KubeletLog() string { return n.kubeletLog }

// CreateCharDevice makes a stand-in character device node on the host,
// recorded so that [Node.Stop] (or the next run's [Recover]) removes it
// and the directories made for it; a path that exists is refused (see
// [Host.CreateCharDevice]).
func (n *Node) CreateCharDevice(path string, major, minor uint32) error {
	return n.host.CreateCharDevice(n.hostRec, path, major, minor)
}

// Name returns the Node's name.
func (n *Node) Name() string { return n.opts.Name }

// Socket returns containerd's CRI socket.
func (n *Node) Socket() string { return n.socket }

// Dir returns the work directory: containerd.log, kubelet.log, the
// configurations, pod-logs/.
func (n *Node) Dir() string { return n.opts.Dir }

// Ctr runs containerd's ctr against this node's containerd in the k8s.io
// namespace (the one the CRI uses) and returns its combined output.
func (n *Node) Ctr(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(n.opts.BinDir, "ctr"), append([]string{"--address", n.socket, "--namespace", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Import imports image archives (docker-save or OCI tarballs) into the
// CRI's image store, so pods run them with imagePullPolicy Never or
// IfNotPresent.
func (n *Node) Import(ctx context.Context, archives ...string) error {
	for _, a := range archives {
		if _, err := n.Ctr(ctx, "images", "import", "--no-unpack=false", a); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops the kubelet and containerd, ends every container and shim,
// and restores the host as Start found it. It returns what differs
// afterwards, if anything (an error listing each difference).
func (n *Node) Stop() error {
	var err error
	n.stopOnce.Do(func() {
		n.StopKubelet()
		n.mu.Lock()
		ctd := n.containerd
		n.containerd = nil
		n.mu.Unlock()
		if ctd != nil {
			ctd.Stop()
		}
		var errs []error
		if rerr := n.host.Restore(); rerr != nil {
			errs = append(errs, rerr)
		}
		diff, derr := n.host.Diff()
		if derr != nil {
			errs = append(errs, derr)
		} else if len(diff) > 0 {
			errs = append(errs, fmt.Errorf("node: the host differs after restoring:\n  %s", strings.Join(diff, "\n  ")))
		}
		if len(errs) == 0 {
			_ = os.Remove(n.hostRec)
		}
		if n.socket != "" {
			_ = os.RemoveAll(filepath.Dir(n.socket))
		}
		err = errors.Join(errs...)
	})
	return err
}

// waitFor polls ok every 100 ms until it holds, p exits, ctx ends or
// timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, p *child.Process, ok func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if ok() {
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("exited: %v", p.Err())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePorts returns n free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
