// SPDX-License-Identifier: Apache-2.0

// Package capturetest runs the whole capture path on a local control
// plane for tests, benchmarks and the demo: audio-api as its
// ServiceAccount under deploy/audio's RBAC, and a capture container (the
// real server, internal/capture) on a real PipeWire, behind the audio
// operator's pod as a kubelet would report it (there is no kubelet: the
// pod's status says the capture container runs at 127.0.0.1 on its port,
// and the capture Secret is projected into its TLS directory the way the
// kubelet projects a Secret volume).
package capturetest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/liken-sh/operators/internal/audioapi"
	"github.com/liken-sh/operators/internal/capture"
	"github.com/liken-sh/operators/internal/metricsserver"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/e2e/harness"
)

// Namespace is deploy/audio's.
const Namespace = "liken-system"

// Options configures Start.
type Options struct {
	// Cluster is the control plane; Start applies deploy/audio's
	// namespace, ServiceAccounts, RBAC and api.yaml to it (the CRDs must
	// be applied already).
	Cluster *harness.Cluster
	// Remote reaches the node's PipeWire.
	Remote pipewire.Remote
	// Node is the node the audio operator's pod is on.
	Node string
	// Taps is the capture container's CAPTURE_TAPS (0: 4).
	Taps int
	// Logger for both servers (klog.Background() if zero).
	Logger klog.Logger
	// APIRegisterer takes audio-api's metrics (nil: none).
	APIRegisterer prometheus.Registerer
}

// Stack is a running audio-api and capture container.
type Stack struct {
	// APIAddress is audio-api's host:port on loopback.
	APIAddress string
	// CAPEM is the CA audio-api minted and published.
	CAPEM []byte
	// Capture is the capture server.
	Capture *capture.Server

	stop []func()
}

// Stop ends both servers.
func (s *Stack) Stop() {
	for i := len(s.stop) - 1; i >= 0; i-- {
		s.stop[i]()
	}
}

// Start applies the RBAC, starts audio-api (which mints the material),
// projects the capture Secret into a TLS directory and starts the
// capture server there, and creates the audio operator's pod on
// opts.Node pointing at it. It returns once audio-api serves and the
// capture server holds the minted leaf.
func Start(ctx context.Context, opts Options) (_ *Stack, err error) {
	c := opts.Cluster
	root, err := harness.ModuleRoot()
	if err != nil {
		return nil, err
	}
	for _, f := range []string{"namespace.yaml", "serviceaccount.yaml", "rbac.yaml", "api.yaml"} {
		if _, err := c.Kubectl(ctx, "apply", "-n", Namespace, "-f", filepath.Join(root, "deploy/audio", f)); err != nil {
			return nil, err
		}
	}
	if opts.Taps == 0 {
		opts.Taps = 4
	}
	logger := opts.Logger
	if logger.GetSink() == nil {
		logger = klog.Background()
	}
	s := &Stack{}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	dir, err := os.MkdirTemp("", "capturetest-")
	if err != nil {
		return nil, err
	}
	s.stop = append(s.stop, func() { os.RemoveAll(dir) })

	// audio-api, as its ServiceAccount, with its projected token for the
	// capture containers.
	tok, err := Token(ctx, c, Namespace, "audio-api", audioapi.CaptureAudience)
	if err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(dir, "capture-token")
	if err := os.WriteFile(tokenFile, []byte(tok), 0o600); err != nil {
		return nil, err
	}
	rc := As(c, "system:serviceaccount:"+Namespace+":audio-api", Namespace, nil)
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.APIAddress = lis.Addr().String()
	apiCtx, stopAPI := context.WithCancel(klog.NewContext(ctx, logger.WithName("audio-api")))
	ready, apiDone := make(chan struct{}), make(chan error, 1)
	go func() {
		apiDone <- audioapi.Serve(apiCtx, audioapi.Config{Client: client, Objects: dyn, Namespace: Namespace,
			CaptureTokenFile: tokenFile, Version: "dev", Registerer: opts.APIRegisterer, Ready: func() { close(ready) }}, lis)
	}()
	s.stop = append(s.stop, func() { stopAPI(); <-apiDone }) //nolint:errcheck // the server's end is awaited; its error was logged when it served
	select {
	case <-ready:
	case err := <-apiDone:
		apiDone <- err
		return nil, fmt.Errorf("audio-api: %w", err)
	case <-time.After(60 * time.Second):
		return nil, errors.New("audio-api did not start within 60 s")
	}
	cm, err := c.Client().CoreV1().ConfigMaps(Namespace).Get(ctx, audioapi.CAConfigMap, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	s.CAPEM = []byte(cm.Data["ca.crt"])

	// The capture container, as the audio operator's ServiceAccount on
	// its node (its TokenReviews), its Secret volume kept current.
	tlsDir := filepath.Join(dir, "audio-capture-tls")
	if err := os.Mkdir(tlsDir, 0o755); err != nil {
		return nil, err
	}
	projCtx, stopProj := context.WithCancel(ctx)
	s.stop = append(s.stop, stopProj)
	if err := projectSecret(ctx, c.Client(), tlsDir, ""); err != nil {
		return nil, err
	}
	go func() {
		rv := ""
		for projCtx.Err() == nil {
			if sec, err := c.Client().CoreV1().Secrets(Namespace).Get(projCtx, audioapi.CaptureSecret, metav1.GetOptions{}); err == nil && sec.ResourceVersion != rv {
				rv = sec.ResourceVersion
				_ = projectSecret(projCtx, c.Client(), tlsDir, rv)
			}
			select {
			case <-projCtx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	// WirePlumber links a tap's recorder within the default LinkDeadline
	// (3 s) on an idle machine, not on a loaded one: a test's bound is
	// generous, and only a link that never comes reaches it.
	cfg := capture.Config{Address: "127.0.0.1:0", Taps: opts.Taps, TLSDir: tlsDir, Remote: opts.Remote, Namespace: Namespace,
		PwRecord: capture.DefaultPwRecord, Flac: capture.DefaultFlac, Opusenc: capture.DefaultOpusenc, Stdbuf: capture.DefaultStdbuf,
		LinkDeadline: 30 * time.Second}
	reviewer, err := capture.NewTokenReviewer(As(c, "system:serviceaccount:"+Namespace+":audio-operator", Namespace,
		map[string][]string{"authentication.kubernetes.io/node-name": {opts.Node}}), cfg.CallerUser())
	if err != nil {
		return nil, err
	}
	srv, err := capture.New(cfg, reviewer, metricsserver.NewRegistry(), "dev", logger.WithName("capture"))
	if err != nil {
		return nil, err
	}
	if err := srv.Certificates().Load(); err != nil {
		return nil, fmt.Errorf("the capture server did not load the minted leaf: %w", err)
	}
	s.Capture = srv
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	capCtx, stopCap := context.WithCancel(ctx)
	capDone := make(chan error, 1)
	go func() { capDone <- srv.Serve(capCtx, cl) }()
	s.stop = append(s.stop, func() { stopCap(); <-capDone }) //nolint:errcheck // the server's end is awaited; its error was logged when it served
	port := cl.Addr().(*net.TCPAddr).Port
	if err := OperatorPod(ctx, c, Namespace, "audio-operator-"+opts.Node, opts.Node, port); err != nil {
		return nil, err
	}
	return s, nil
}

// projectSecret writes Secret audio-capture-server's keys into dir as
// the kubelet updates a Secret volume: a new timestamped directory, then
// the ..data link swapped to it in one rename, the files links through
// ..data.
func projectSecret(ctx context.Context, client kubernetes.Interface, dir, _ string) error {
	sec, err := client.CoreV1().Secrets(Namespace).Get(ctx, audioapi.CaptureSecret, metav1.GetOptions{})
	if err != nil {
		return err
	}
	ts := filepath.Join(dir, ".."+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := os.Mkdir(ts, 0o755); err != nil {
		return err
	}
	for name, b := range sec.Data {
		if err := os.WriteFile(filepath.Join(ts, name), b, 0o644); err != nil {
			return err
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		return err
	}
	for name := range sec.Data {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err != nil {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				return err
			}
		}
	}
	return nil
}

// As is a REST config of c acting as user (a ServiceAccount of ns, in its
// groups) with the user extra.
func As(c *harness.Cluster, user, ns string, extra map[string][]string) *rest.Config {
	cfg := c.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: user,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		Extra:    extra,
	}
	return cfg
}

// Token creates (if needed) the ServiceAccount ns/name and returns an
// hour's token for audience, as the kubelet projects one.
func Token(ctx context.Context, c *harness.Cluster, ns, name, audience string) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if _, err := c.Client().CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	tr, err := c.Client().CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// OperatorPod creates the audio operator's pod ns/name on node as its
// DaemonSet would, with the status a kubelet writes once its capture
// container runs: Running and ready at pod IP 127.0.0.1, the capture port
// at port.
func OperatorPod(ctx context.Context, c *harness.Cluster, ns, name, node string, port int) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "audio-operator"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{
			{Name: "operator", Image: "ghcr.io/liken-sh/audio-operator:latest"},
			{Name: "capture", Image: "ghcr.io/liken-sh/audio-operator:latest", Args: []string{"capture"},
				Ports: []corev1.ContainerPort{{Name: "capture", ContainerPort: int32(port)}}},
		}},
	}
	return RunningPod(ctx, c, pod)
}

// RunningPod creates pod and writes the status a kubelet writes once all
// its containers run: Running and Ready at pod IP 127.0.0.1.
func RunningPod(ctx context.Context, c *harness.Cluster, pod *corev1.Pod) error {
	created, err := c.Client().CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	created.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
	}
	for _, ctr := range pod.Spec.Containers {
		created.Status.ContainerStatuses = append(created.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: ctr.Name, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	_, err = c.Client().CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// Client is an HTTPS client for audio-api that trusts s.CAPEM, verifies
// the Service's name and presents cert when it is not nil.
func (s *Stack) Client(cert *tls.Certificate) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.CAPEM)
	tc := &tls.Config{RootCAs: pool, ServerName: "audio-api." + Namespace + ".svc"}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
}

// AdminCertificate is the cluster admin's client certificate (CN admin, O
// system:masters), which audio-api accepts against the cluster's client
// CA.
func AdminCertificate(c *harness.Cluster) (*tls.Certificate, error) {
	rc := c.RESTConfig()
	cert, err := tls.X509KeyPair(rc.CertData, rc.KeyData)
	return &cert, err
}
