// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/audioapi"
	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/test/capturetest"
	"github.com/liken-sh/operators/test/e2e/harness"
)

// expiredToken is a token for the ServiceAccount ns/name signed with the
// cluster's own service-account key, well formed in every way but its
// expiry, an hour ago.
func expiredToken(t *testing.T, ctx context.Context, c *harness.Cluster, ns, name, audience string) string {
	t.Helper()
	sa, err := c.Client().CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
	must(t, err)
	data, err := os.ReadFile(filepath.Join(c.Dir(), "pki", "sa.key"))
	must(t, err)
	b, _ := pem.Decode(data)
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	must(t, err)
	key := k.(*rsa.PrivateKey)
	enc := func(v any) string {
		j, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(j)
	}
	now := time.Now()
	head := enc(map[string]any{"alg": "RS256", "typ": "JWT"})
	body := enc(map[string]any{
		"iss": "https://kubernetes.default.svc", "aud": []string{audience},
		"sub": "system:serviceaccount:" + ns + ":" + name,
		"iat": now.Add(-2 * time.Hour).Unix(), "nbf": now.Add(-2 * time.Hour).Unix(), "exp": now.Add(-time.Hour).Unix(),
		"kubernetes.io": map[string]any{"namespace": ns, "serviceaccount": map[string]any{"name": name, "uid": string(sa.UID)}},
	})
	sum := sha256.Sum256([]byte(head + "." + body))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	must(t, err)
	return head + "." + body + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// bindViewer binds ClusterRole audio-capture-viewer to the ServiceAccount
// ns/name, as a cluster owner does to let someone listen.
func bindViewer(t testing.TB, ctx context.Context, c *harness.Cluster, ns, name string) {
	t.Helper()
	_, err := c.Client().RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-listens"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "audio-capture-viewer"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: name}},
	}, metav1.CreateOptions{})
	must(t, err)
}

// bindClient binds Role audio-capture-client in liken-system to the
// ServiceAccount ns/name: what kubectl liken audio needs besides the
// grant to listen.
func bindClient(t *testing.T, ctx context.Context, c *harness.Cluster, ns, name string) {
	t.Helper()
	_, err := c.Client().RbacV1().RoleBindings("liken-system").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-audio-client"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "audio-capture-client"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: name}},
	}, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
}

// createEndpoint creates a Sink or Source named name whose status names
// node (none when node is empty), as the audio operator would.
func createEndpoint(t testing.TB, ctx context.Context, dyn dynamic.Interface, kind, name, node string) {
	t.Helper()
	gvr := audiov1.SinksResource
	if kind == "Source" {
		gvr = audiov1.SourcesResource
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": audiov1.GroupVersion.String(), "kind": kind, "metadata": map[string]any{"name": name},
	}}
	created, err := dyn.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{})
	must(t, err)
	if node == "" {
		return
	}
	created.Object["status"] = map[string]any{"node": node, "connectionType": "hdmi"}
	_, err = dyn.Resource(gvr).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	must(t, err)
}

// fakeOperatorPod creates the audio operator's pod on node with its
// capture container at 127.0.0.1:port, as capturetest.OperatorPod does.
func fakeOperatorPod(t *testing.T, ctx context.Context, c *harness.Cluster, ns, name, node string, port int) {
	t.Helper()
	must(t, capturetest.OperatorPod(ctx, c, ns, name, node, port))
}

// serviceAccountToken is capturetest.Token for a test.
func serviceAccountToken(t *testing.T, ctx context.Context, c *harness.Cluster, ns, name, audience string) string {
	t.Helper()
	tok, err := capturetest.Token(ctx, c, ns, name, audience)
	must(t, err)
	return tok
}

// startAudioAPI runs audioapi.Serve on a loopback port until the test
// ends, and returns its address.
func startAudioAPI(t *testing.T, ctx context.Context, cfg audioapi.Config) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	ready := make(chan struct{})
	cfg.Ready = func() { close(ready) }
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- audioapi.Serve(ctx, cfg, lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("audio-api: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("audio-api did not start: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("audio-api did not start within 60 s")
	}
	return lis.Addr().String()
}

// clientFor is an HTTPS client that trusts audio-api's CA (as published
// in ConfigMap audio-api-ca of ns) and verifies its Service name.
func clientFor(t *testing.T, ctx context.Context, c *harness.Cluster, ns string, cert *tls.Certificate) *http.Client {
	t.Helper()
	cm, err := c.Client().CoreV1().ConfigMaps(ns).Get(ctx, audioapi.CAConfigMap, metav1.GetOptions{})
	must(t, err)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(cm.Data["ca.crt"])) {
		t.Fatalf("ConfigMap %s/%s holds no CA: %v", ns, audioapi.CAConfigMap, cm.Data)
	}
	tc := &tls.Config{RootCAs: pool, ServerName: "audio-api." + ns + ".svc"}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}}
}

// get sends a GET with the bearer token (none if empty).
func get(t *testing.T, ctx context.Context, client *http.Client, url, token string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	must(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	must(t, err)
	return resp
}

// problemOf decodes a problem document, failing the test when resp is
// not one of status want.
func problemOf(t *testing.T, resp *http.Response, want int) map[string]any {
	t.Helper()
	defer resp.Body.Close()
	var p map[string]any
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s: Content-Type %q, want application/problem+json", resp.Request.URL.Path, ct)
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatalf("%s: problem document: %v", resp.Request.URL.Path, err)
	}
	if resp.StatusCode != want || p["status"] != float64(want) {
		t.Errorf("%s: %d %v, want %d", resp.Request.URL.Path, resp.StatusCode, p, want)
	}
	return p
}

// wavHeader is a streaming WAV header for s16le at rate and channels.
func wavHeader(rate, channels int) []byte {
	h := make([]byte, 44)
	copy(h, "RIFF")
	copy(h[4:], []byte{0xff, 0xff, 0xff, 0xff})
	copy(h[8:], "WAVEfmt ")
	h[16] = 16
	h[20] = 1
	h[22] = byte(channels)
	put32 := func(off, v int) {
		h[off], h[off+1], h[off+2], h[off+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	put32(24, rate)
	put32(28, rate*channels*2)
	h[32] = byte(channels * 2)
	h[34] = 16
	copy(h[36:], "data")
	copy(h[40:], []byte{0xff, 0xff, 0xff, 0xff})
	return h
}

// setConnected sets the Connected condition of the Sink name to status
// with reason and message, as the audio operator publishes it.
// disconnectAndDrain marks Sink name disconnected (Connected False,
// NoMonitor) while resp streams a tap of it, then reads the rest of the
// body, failing the test if it still streams 20 s later. It returns the
// tap's ended trailer and the body's read error (nil: it ended cleanly).
func disconnectAndDrain(t testing.TB, ctx context.Context, dyn dynamic.Interface, name string, resp *http.Response) (string, error) {
	t.Helper()
	setConnected(t, ctx, dyn, name, metav1.ConditionFalse, "NoMonitor", "no monitor answers on this port")
	done := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); done <- err }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		resp.Body.Close()
		t.Fatalf("the tap of %s still streams 30 s after the Sink became disconnected", name)
	}
	resp.Body.Close()
	return resp.Trailer.Get(captureapi.TrailerEnded), err
}

func setConnected(t testing.TB, ctx context.Context, dyn dynamic.Interface, name string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	obj, err := dyn.Resource(audiov1.SinksResource).Get(ctx, name, metav1.GetOptions{})
	must(t, err)
	conds := []any{map[string]any{"type": audiov1.ConditionConnected, "status": string(status), "reason": reason, "message": message,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}
	must(t, unstructured.SetNestedSlice(obj.Object, conds, "status", "conditions"))
	_, err = dyn.Resource(audiov1.SinksResource).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	must(t, err)
}
