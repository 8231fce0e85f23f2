// SPDX-License-Identifier: Apache-2.0

package audiocli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/liken-sh/operators/internal/kubeclient"
	"github.com/liken-sh/operators/internal/safetext"
)

// Where audio-api is (deploy/audio/api.yaml).
const (
	apiPodLabel  = "app=audio-api"
	apiPort      = 8443
	caConfigMap  = "audio-api-ca"
	pluginLabel  = "cli.liken.sh/plugin=audio"
	apiService   = "audio-api"
	connectLimit = 30 * time.Second
)

// cluster is what the commands reach the cluster with.
type cluster struct {
	rest   *rest.Config
	client kubernetes.Interface
}

// restConfig is the REST config kubectl's connection flags give. A
// $KUBECONFIG naming no file that exists is an error here, not a silent
// fall-back to localhost:8080.
func (o *Options) restConfig() (*rest.Config, error) {
	if err := kubeclient.CheckKubeconfigFiles(o.Kube.ToRawKubeConfigLoader().ConfigAccess()); err != nil {
		return nil, err
	}
	rc, err := o.Kube.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	rc.UserAgent = "kubectl-liken-audio/" + o.Version
	return rc, nil
}

func (o *Options) cluster() (*cluster, error) {
	rc, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &cluster{rest: rc, client: client}, nil
}

// checkVersion reads the operator's release from the image tag of the
// first container of the workload labelled cli.liken.sh/plugin=audio
// (deploy/audio/operator.yaml's DaemonSet) and, when it is not this
// plugin's, holds a warning for flushWarnings, unless o.Force. The
// warning waits so that a real error (no cluster, no such Sink) is the
// first thing a person reads; a cluster that cannot be reached at all
// gives no warning, since the request that follows fails and says why.
func (o *Options) checkVersion(ctx context.Context, c *cluster) {
	if o.Force {
		return
	}
	ds, err := c.client.AppsV1().DaemonSets(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: pluginLabel})
	var image string
	var status apierrors.APIStatus
	switch {
	case err != nil && !errors.As(err, &status):
		return
	case err != nil:
		o.warnLater("cannot read the audio operator's version (%v); --force silences this", err)
		return
	case len(ds.Items) > 0 && len(ds.Items[0].Spec.Template.Spec.Containers) > 0:
		image = ds.Items[0].Spec.Template.Spec.Containers[0].Image
	default:
		dep, err := c.client.AppsV1().Deployments(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: pluginLabel})
		if err == nil && len(dep.Items) > 0 && len(dep.Items[0].Spec.Template.Spec.Containers) > 0 {
			image = dep.Items[0].Spec.Template.Spec.Containers[0].Image
		}
	}
	if image == "" {
		o.warnLater("no workload labelled %s in namespace %s, so the operator's version is unknown; --force silences this", pluginLabel, o.Namespace)
		return
	}
	if v := imageTag(image); v != o.Version {
		o.warnLater("the audio operator runs %s (version %q) and this plugin is version %q; install the plugin of the operator's version, or pass --force", image, v, o.Version)
	}
}

// imageTag is the tag of an image reference ("" when it has none or is
// pinned by digest alone).
func imageTag(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	slash := strings.LastIndex(ref, "/")
	if i := strings.LastIndex(ref, ":"); i > slash {
		return ref[i+1:]
	}
	return ""
}

// Names of the grant deploy/audio/api.yaml defines for a listener: the
// Role in the operators' namespace that lets the plugin reach audio-api,
// and the ClusterRole that lets a caller tap.
const (
	clientRole = "audio-capture-client"
	viewerRole = "audio-capture-viewer"
)

// grantHint adds to a Forbidden answer of the API server what the caller
// lacks: the bindings deploy/audio/api.yaml describes. Other errors are
// returned as they are.
func (o *Options) grantHint(err error) error {
	if !apierrors.IsForbidden(err) {
		return err
	}
	return fmt.Errorf("%w; kubectl liken audio needs the Role %s in namespace %s bound to you, and the ClusterRole %s to tap (deploy/audio/api.yaml shows both bindings)", err, clientRole, o.Namespace, viewerRole)
}

// apiClient is an HTTP client for audio-api: it trusts the CA in
// ConfigMap audio-api-ca, verifies the Service's name, and authenticates
// with the caller's own credentials from the kubeconfig (client
// certificate, token, exec plugin). base is the origin to send requests
// to; stop ends the port-forward.
func (o *Options) apiClient(ctx context.Context, c *cluster) (client *http.Client, base string, stop func(), err error) {
	cm, err := c.client.CoreV1().ConfigMaps(o.Namespace).Get(ctx, caConfigMap, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", nil, fmt.Errorf("ConfigMap %s/%s, the CA to trust, is missing: audio-api publishes it when it starts and again when it is deleted; check that audio-api runs (kubectl -n %s get deploy %s)", o.Namespace, caConfigMap, o.Namespace, apiService)
		}
		return nil, "", nil, o.grantHint(fmt.Errorf("reading the CA to trust: %w", err))
	}
	ca := cm.Data["ca.crt"]
	if ca == "" {
		return nil, "", nil, fmt.Errorf("ConfigMap %s/%s has no ca.crt", o.Namespace, caConfigMap)
	}
	tc := rest.CopyConfig(c.rest)
	tc.TLSClientConfig = rest.TLSClientConfig{
		CAData: []byte(ca), ServerName: apiService + "." + o.Namespace + ".svc",
		CertData: c.rest.CertData, KeyData: c.rest.KeyData, CertFile: c.rest.CertFile, KeyFile: c.rest.KeyFile,
	}
	rt, err := rest.TransportFor(tc)
	if err != nil {
		return nil, "", nil, err
	}
	client = &http.Client{Transport: rt}
	if o.APIAddress != "" {
		return client, "https://" + o.APIAddress, func() {}, nil
	}
	addr, stop, err := o.portForward(ctx, c)
	if err != nil {
		return nil, "", nil, err
	}
	return client, "https://" + addr, stop, nil
}

// portForward forwards a free loopback port to port 8443 of a Ready
// audio-api pod, through the API server with the caller's credentials:
// WebSocket first, SPDY where the API server does not upgrade to it, as
// kubectl port-forward does.
func (o *Options) portForward(ctx context.Context, c *cluster) (string, func(), error) {
	pods, err := c.client.CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: apiPodLabel})
	if err != nil {
		return "", nil, o.grantHint(fmt.Errorf("finding audio-api's pod: %w", err))
	}
	var ready []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(&p) {
			ready = append(ready, p)
		}
	}
	if len(ready) == 0 {
		return "", nil, fmt.Errorf("no Ready audio-api pod (%s) in namespace %s (%d pods)", apiPodLabel, o.Namespace, len(pods.Items))
	}
	sort.Slice(ready, func(i, j int) bool { return ready[j].CreationTimestamp.Before(&ready[i].CreationTimestamp) })
	pod := ready[0]
	u := c.client.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward").URL()

	transport, upgrader, err := spdy.RoundTripperFor(c.rest)
	if err != nil {
		return "", nil, err
	}
	var dialer httpstream.Dialer = spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	if ws, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, c.rest); err == nil {
		dialer = portforward.NewFallbackDialerForStreaming(ws, dialer, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
	}
	stopCh, readyCh := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(apiPort)}, stopCh, readyCh, io.Discard, o.ErrOut)
	if err != nil {
		return "", nil, err
	}
	errc := make(chan error, 1)
	go func() { errc <- fw.ForwardPorts() }()
	stop := func() { close(stopCh) }
	select {
	case <-readyCh:
	case err := <-errc:
		return "", nil, fmt.Errorf("port-forward to pod %s/%s: %w", pod.Namespace, pod.Name, err)
	case <-time.After(connectLimit):
		stop()
		return "", nil, fmt.Errorf("port-forward to pod %s/%s did not start within %s", pod.Namespace, pod.Name, connectLimit)
	case <-ctx.Done():
		stop()
		return "", nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		stop()
		return "", nil, fmt.Errorf("port-forward to pod %s/%s: no local port (%v)", pod.Namespace, pod.Name, err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))), stop, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// maxProblemText bounds what of a problem's title or detail, or of a
// body that is not one, an error repeats: far more than any detail
// audio-api writes whole (a disconnected Sink's names the condition's
// message), so that only a body that is truly huge, such as a server
// echoing a long request back, is cut rather than fill the terminal.
const maxProblemText = 4096

// problemError turns an answer that is not 2xx into an error carrying the
// problem document's detail, else its title (RFC 9457), whole unless it
// is huge (shortText); a body that is not a problem document is named by
// its status and length, and quoted only when it is text, never as raw
// JSON.
func problemError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var p struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
	}
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/problem+json") || strings.HasPrefix(ct, "application/json") {
		if jsonUnmarshal(body, &p) == nil && (p.Detail != "" || p.Title != "") {
			msg := p.Detail
			if msg == "" {
				msg = p.Title
			}
			return fmt.Errorf("%s (%d %s)", shortText(msg), resp.StatusCode, http.StatusText(resp.StatusCode))
		}
		return fmt.Errorf("audio-api answered %s with %d bytes of JSON that is not a problem document", resp.Status, len(body))
	}
	text := strings.TrimSpace(string(body))
	if text == "" {
		return fmt.Errorf("audio-api answered %s", resp.Status)
	}
	return fmt.Errorf("audio-api answered %s: %s", resp.Status, shortText(text))
}

// shortText is s made safe for a terminal (safetext.Clean), whole when
// that is at most maxProblemText bytes. A longer one is cut after the
// last sentence that ends within the bound, or when none ends in its
// second half after the last word there, or failing that at a character
// boundary, and says so with how much of it is shown:
// "... (cut: 4000 of 102400 bytes shown)".
func shortText(s string) string {
	c := safetext.Clean(s, len(s)+1)
	if len(c) <= maxProblemText {
		return c
	}
	cut := maxProblemText
	for cut > 0 && !utf8.RuneStart(c[cut]) {
		cut--
	}
	// c[cut] is where the next character starts: a space there ends a
	// sentence or a word at the bound itself.
	if end := sentenceEnd(c[:cut+1]); end >= maxProblemText/2 {
		cut = end
	} else if sp := strings.LastIndexByte(c[:cut+1], ' '); sp >= maxProblemText/2 {
		cut = sp
	}
	kept := strings.TrimRight(c[:cut], " ")
	return fmt.Sprintf("%s ... (cut: %d of %d bytes shown)", kept, len(kept), len(c))
}

// sentenceEnd is the length of s up to and including the last '.', '!'
// or '?' that a space follows, or 0 when there is none.
func sentenceEnd(s string) int {
	for i := len(s) - 2; i >= 0; i-- {
		if s[i+1] == ' ' && strings.IndexByte(".!?", s[i]) >= 0 {
			return i + 1
		}
	}
	return 0
}

// errCut is a body that ended before the span it asked for.
var errCut = errors.New("the capture was cut short")

// requestURL joins base and path with the query.
func requestURL(base, path string, q url.Values) string {
	s := base + path
	if len(q) > 0 {
		s += "?" + q.Encode()
	}
	return s
}
