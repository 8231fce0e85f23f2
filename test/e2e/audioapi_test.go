// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/liken-sh/operators/test/child"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/liken-sh/operators/internal/audioapi"
	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/internal/certmint"
	"github.com/liken-sh/operators/test/capturetest"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/poll"
)

// standInCapture answers the capture container's routes over TLS with
// the leaf audio-api minted into Secret audio-capture-server (read at
// every handshake, so a renewed leaf is served at once), or with a leaf
// of its own CA when foreign is set. It takes only audio-api's capture
// token. A WAV tap streams a header and then 1 KiB every 10 ms, until the
// span's end or the client leaves. It stands in for the capture
// container where this test proves audio-api's own behaviour; the tests
// with PipeWire run the real one.
type standInCapture struct {
	client   kubernetes.Interface
	ns       string
	token    string
	foreign  *tls.Certificate
	taps     atomic.Int32 // taps streaming now
	requests atomic.Int32 // requests answered since start
}

func (s *standInCapture) start(t *testing.T) int {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	srv := &http.Server{Handler: s, TLSConfig: &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		if s.foreign != nil {
			return s.foreign, nil
		}
		sec, err := s.client.CoreV1().Secrets(s.ns).Get(context.Background(), audioapi.CaptureSecret, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		c, err := tls.X509KeyPair(sec.Data["tls.crt"], sec.Data["tls.key"])
		return &c, err
	}}}
	go func() { _ = srv.ServeTLS(lis, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return lis.Addr().(*net.TCPAddr).Port
}

func (s *standInCapture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		captureapi.NewProblem(captureapi.ProblemUnauthenticated, "not audio-api's token").Write(w)
		return
	}
	m, p := captureapi.ParsePath(r.URL.EscapedPath())
	if p != nil {
		p.Write(w)
		return
	}
	if m.Route.Kind == captureapi.KindInfo {
		w.Header().Set("Content-Type", captureapi.MediaTypeJSON)
		_ = json.NewEncoder(w).Encode(captureapi.Info{Kind: m.Route.Resource.Kind, Name: m.Name, Node: "alsa_output." + m.Name, Rate: 48000, Channels: 2, Monitor: true})
		return
	}
	f, _ := m.Format()
	q, p := captureapi.ParseTapQuery(r.URL.RawQuery, f)
	if p != nil {
		p.Write(w)
		return
	}
	s.taps.Add(1)
	defer s.taps.Add(-1)
	w.Header().Set("Content-Type", f.MediaType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(wavHeader(48000, 2))
	start := time.Now()
	chunk := make([]byte, 1024)
	for {
		if q.Span.Bounded() && time.Since(start) >= q.Span.End {
			return
		}
		if _, err := w.Write(chunk); err != nil {
			return
		}
		http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// selfSigned is a leaf for audio-capture that signs itself, so no CA
// audio-api knows.
func selfSigned(t *testing.T) *tls.Certificate {
	t.Helper()
	p, err := certmint.SelfSigned(certmint.Spec{CommonName: "audio-capture", DNSNames: []string{"audio-capture"},
		Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)})
	must(t, err)
	cert := p.TLS()
	return &cert
}

// TestAudioAPI runs audio-api as its ServiceAccount under deploy/audio's
// RBAC against the real control plane: the TLS material it mints, who may
// tap what (TokenReview, client certificates, SubjectAccessReview before
// any read), routing by status.node to the operator's pod, the Captured
// Event, and a client's view of every refusal.
func TestAudioAPI(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	c, err := harness.Start(ctx, harness.Options{Logf: t.Logf})
	must(t, err)
	t.Cleanup(c.Stop)
	must(t, c.ApplyCRDs(ctx, "deploy/audio/crds"))
	for _, f := range []string{"namespace.yaml", "serviceaccount.yaml", "rbac.yaml", "api.yaml"} {
		kubectl(t, ctx, c, "apply", "-n", "liken-system", "-f", filepath.Join("deploy/audio", f))
	}
	_, err = c.WaitForServiceAccount(ctx, "default", "default")
	must(t, err)
	admin := c.Client()
	dynAdmin, err := dynamic.NewForConfig(c.RESTConfig())
	must(t, err)
	const ns = "liken-system"

	dir := t.TempDir()
	captureToken := serviceAccountToken(t, ctx, c, ns, "audio-api", audioapi.CaptureAudience)
	tokenFile := filepath.Join(dir, "capture-token")
	must(t, os.WriteFile(tokenFile, []byte(captureToken), 0o600))

	rc := capturetest.As(c, "system:serviceaccount:liken-system:audio-api", ns, nil)
	reviews := countTokenReviews(rc)
	client, err := kubernetes.NewForConfig(rc)
	must(t, err)
	dyn, err := dynamic.NewForConfig(rc)
	must(t, err)
	reg := prometheus.NewRegistry()
	addr := startAudioAPI(t, ctx, audioapi.Config{Client: client, Objects: dyn, Namespace: ns, CaptureTokenFile: tokenFile,
		Version: "e2e", Registerer: reg})
	base := "https://" + addr

	t.Run("minted", func(t *testing.T) { checkMinted(t, ctx, c, ns) })

	// The capture containers: one on node-a answering with the minted
	// leaf, one on node-c with a leaf of another CA; none on node-b.
	standIn := &standInCapture{client: admin, ns: ns, token: captureToken}
	fakeOperatorPod(t, ctx, c, ns, "audio-operator-a", "node-a", standIn.start(t))
	foreign := &standInCapture{client: admin, ns: ns, token: captureToken, foreign: selfSigned(t)}
	fakeOperatorPod(t, ctx, c, ns, "audio-operator-c", "node-c", foreign.start(t))
	createEndpoint(t, ctx, dynAdmin, "Sink", "kitchen", "node-a")
	createEndpoint(t, ctx, dynAdmin, "Source", "desk-mic", "node-a")
	createEndpoint(t, ctx, dynAdmin, "Sink", "unplugged", "")
	createEndpoint(t, ctx, dynAdmin, "Sink", "attic", "node-b")
	createEndpoint(t, ctx, dynAdmin, "Sink", "porch", "node-c")
	createEndpoint(t, ctx, dynAdmin, "Sink", "dark", "node-a")
	setConnected(t, ctx, dynAdmin, "dark", metav1.ConditionFalse, "NoMonitor", "no monitor answers on this port")
	createEndpoint(t, ctx, dynAdmin, "Sink", "den", "node-a")
	setConnected(t, ctx, dynAdmin, "den", metav1.ConditionTrue, "MonitorPresent", "the monitor's ELD is valid")
	createEndpoint(t, ctx, dynAdmin, "Sink", "headphones", "node-a")
	setConnected(t, ctx, dynAdmin, "headphones", metav1.ConditionFalse, "JackUnplugged", "Headphone Jack is unplugged")
	setConnected(t, ctx, dynAdmin, "kitchen", metav1.ConditionTrue, "MonitorPresent", "the monitor's ELD is valid")

	listener := serviceAccountToken(t, ctx, c, "default", "listener", audioapi.Audience)
	bindViewer(t, ctx, c, "default", "listener")
	nobody := serviceAccountToken(t, ctx, c, "default", "nobody", audioapi.Audience)
	// What a person's kubeconfig holds: a token for the API server itself.
	listenerKube := serviceAccountToken(t, ctx, c, "default", "listener", "https://kubernetes.default.svc")
	bindClient(t, ctx, c, "default", "listener")
	wrongAudience := serviceAccountToken(t, ctx, c, "default", "listener", "https://example.com/another-service")
	https := clientFor(t, ctx, c, ns, nil)
	tap := base + "/v1/audio/sinks/kitchen/audio.wav?t=0,0.3"

	t.Run("authentication", func(t *testing.T) {
		p := problemOf(t, get(t, ctx, https, tap, ""), http.StatusUnauthorized)
		if p["type"] != captureapi.ProblemUnauthenticated.URI {
			t.Errorf("no credential: %v", p)
		}
		for name, tok := range map[string]string{
			"expired":        expiredToken(t, ctx, c, "default", "listener", audioapi.Audience),
			"wrong audience": wrongAudience,
			"garbage":        "not-a-token",
		} {
			resp := get(t, ctx, https, tap, tok)
			if h := resp.Header.Get("WWW-Authenticate"); !strings.Contains(h, `error="invalid_token"`) {
				t.Errorf("%s token: WWW-Authenticate %q", name, h)
			}
			p := problemOf(t, resp, http.StatusUnauthorized)
			t.Logf("%s token: %v", name, p["detail"])
		}
	})

	t.Run("authorization", func(t *testing.T) {
		// Someone without the grant learns nothing: the same refusal for a
		// name that exists and one that does not.
		var details []string
		for _, name := range []string{"kitchen", "no-such-sink"} {
			resp := get(t, ctx, https, base+"/v1/audio/sinks/"+name+"/audio.wav", nobody)
			if h := resp.Header.Get("WWW-Authenticate"); !strings.Contains(h, `scope="sinks/audio"`) {
				t.Errorf("%s: WWW-Authenticate %q", name, h)
			}
			p := problemOf(t, resp, http.StatusForbidden)
			details = append(details, strings.ReplaceAll(p["detail"].(string), name, "NAME"))
		}
		if details[0] != details[1] {
			t.Errorf("403 details differ between an existing and a missing name:\n%s\n%s", details[0], details[1])
		}
		if standIn.taps.Load() != 0 {
			t.Error("a refused request reached the capture container")
		}
		// With the grant: a missing name is 404, an existing one streams.
		problemOf(t, get(t, ctx, https, base+"/v1/audio/sinks/no-such-sink/audio.wav", listener), http.StatusNotFound)
		resp := get(t, ctx, https, tap, listener)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		must(t, err)
		if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte("RIFF")) || len(body) < 10*1024 {
			t.Fatalf("granted tap: %d, %d bytes: %q", resp.StatusCode, len(body), body[:min(len(body), 200)])
		}
		for h, want := range map[string]string{"Content-Type": "audio/wav", "Vary": "Accept", "Content-Location": "/v1/audio/sinks/kitchen/audio.wav"} {
			if got := resp.Header.Get(h); got != want {
				t.Errorf("tap header %s: %q, want %q", h, got, want)
			}
		}
		if !strings.HasPrefix(resp.Header.Get("Content-Disposition"), `inline; filename="kitchen-`) {
			t.Errorf("Content-Disposition %q", resp.Header.Get("Content-Disposition"))
		}
		// The information route needs get on the plain resource.
		resp = get(t, ctx, https, base+"/v1/audio/sources/desk-mic", listener)
		var info captureapi.Info
		must(t, json.NewDecoder(resp.Body).Decode(&info))
		resp.Body.Close()
		if resp.StatusCode != 200 || info.Name != "desk-mic" || info.Kind != "Source" {
			t.Errorf("info: %d %+v", resp.StatusCode, info)
		}
	})

	t.Run("client certificate", func(t *testing.T) {
		// The cluster's admin certificate (CN admin, O system:masters),
		// checked against kube-system/extension-apiserver-authentication.
		rc := c.RESTConfig()
		cert, err := tls.X509KeyPair(rc.CertData, rc.KeyData)
		must(t, err)
		resp := get(t, ctx, clientFor(t, ctx, c, ns, &cert), tap, "")
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n < 1024 {
			t.Errorf("admin client certificate: %d, %d bytes", resp.StatusCode, n)
		}
		// A certificate of another CA is refused, not passed over for a
		// token.
		other := selfSigned(t)
		p := problemOf(t, get(t, ctx, clientFor(t, ctx, c, ns, other), tap, listener), http.StatusUnauthorized)
		if !strings.Contains(p["detail"].(string), "client certificate refused") {
			t.Errorf("foreign client certificate: %v", p)
		}
	})

	t.Run("routing", func(t *testing.T) {
		p := problemOf(t, get(t, ctx, https, base+"/v1/audio/sinks/unplugged/audio.wav", listener), http.StatusConflict)
		if p["type"] != captureapi.ProblemAway.URI {
			t.Errorf("no status.node: %v", p)
		}
		// A Sink published as disconnected is not tapped, nor is anything
		// started on its node; its information still answers. An
		// unplugged jack is no such Sink.
		taps := standIn.requests.Load()
		p = problemOf(t, get(t, ctx, https, base+"/v1/audio/sinks/dark/audio.wav", listener), http.StatusConflict)
		if d, _ := p["detail"].(string); p["type"] != captureapi.ProblemDisconnected.URI || !strings.Contains(d, `Sink "dark" is disconnected`) ||
			!strings.Contains(d, "no monitor answers on this port (NoMonitor)") {
			t.Errorf("a tap of a disconnected Sink: %v", p)
		}
		head, err := http.NewRequestWithContext(ctx, http.MethodHead, base+"/v1/audio/sinks/dark/audio.wav", nil)
		must(t, err)
		head.Header.Set("Authorization", "Bearer "+listener)
		resp, err := https.Do(head)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict {
			t.Errorf("HEAD of a disconnected Sink's tap: %d", resp.StatusCode)
		}
		if n := standIn.requests.Load(); n != taps {
			t.Errorf("a refused tap of a disconnected Sink reached the capture container (%d requests)", n-taps)
		}
		resp = get(t, ctx, https, base+"/v1/audio/sinks/dark", listener)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("information of a disconnected Sink: %d", resp.StatusCode)
		}
		resp = get(t, ctx, https, base+"/v1/audio/sinks/headphones/audio.wav?t=0,0.1", listener)
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || n < 1024 {
			t.Errorf("a tap of an unplugged jack's Sink: %d, %d bytes", resp.StatusCode, n)
		}

		resp = get(t, ctx, https, base+"/v1/audio/sinks/attic/audio.wav", listener)
		if resp.Header.Get("Retry-After") == "" {
			t.Error("503 without Retry-After")
		}
		p = problemOf(t, resp, http.StatusServiceUnavailable)
		if !strings.Contains(p["detail"].(string), "node-b") || !strings.Contains(p["detail"].(string), "no audio operator pod") {
			t.Errorf("no operator pod on the node: %v", p)
		}
		before, err := admin.CoreV1().Secrets(ns).Get(ctx, audioapi.CaptureSecret, metav1.GetOptions{})
		must(t, err)
		p = problemOf(t, get(t, ctx, https, base+"/v1/audio/sinks/porch/audio.wav", listener), http.StatusServiceUnavailable)
		if !strings.Contains(p["detail"].(string), "certificate") {
			t.Errorf("a capture leaf of another CA: %v", p)
		}
		after, err := admin.CoreV1().Secrets(ns).Get(ctx, audioapi.CaptureSecret, metav1.GetOptions{})
		must(t, err)
		if before.ResourceVersion != after.ResourceVersion {
			t.Error("a capture container's foreign leaf changed Secret audio-capture-server")
		}
		p = problemOf(t, get(t, ctx, https, base+"/v1/audio/sinks/..%2Fsecrets/audio", listener), http.StatusBadRequest)
		t.Logf("/..: %v", p["detail"])
		p = problemOf(t, get(t, ctx, https, base+"/v1/audio/sinks/kitchen/audio?t=70,80", listener), http.StatusBadRequest)
		t.Logf("t=70,80: %v", p["detail"])
		p = problemOf(t, get(t, ctx, https, base+"/v1/audio/sinks/kitchen/audio", listener, "Accept", "text/html"), http.StatusNotAcceptable)
		if acc, _ := p["acceptable"].([]any); len(acc) != 3 {
			t.Errorf("406 lists %v", p["acceptable"])
		}
	})

	t.Run("disconnected while tapped", func(t *testing.T) {
		// An open-ended tap ends cleanly with the reason in its trailer,
		// and the capture container's tap stops; one with an end is cut.
		for _, span := range []string{"", "?t=0,60"} {
			setConnected(t, ctx, dynAdmin, "den", metav1.ConditionTrue, "MonitorPresent", "the monitor's ELD is valid")
			resp := get(t, ctx, https, base+"/v1/audio/sinks/den/audio.wav"+span, listener)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("tap of den%s: %d", span, resp.StatusCode)
			}
			head := make([]byte, 8<<10)
			_, err := io.ReadFull(resp.Body, head)
			must(t, err)
			ended, err := disconnectAndDrain(t, ctx, dynAdmin, "den", resp)
			if span == "" && (err != nil || !strings.Contains(ended, `Sink "den" is disconnected: no monitor answers on this port (NoMonitor)`)) {
				t.Errorf("open-ended tap: body %v, trailer %s %q", err, captureapi.TrailerEnded, ended)
			}
			if span != "" && err == nil {
				t.Errorf("tap with an end: the body ended cleanly (trailer %q), want it cut", ended)
			}
			poll.WaitFor(t, ctx, "the capture container's tap stopped", 30*time.Second, func() (bool, string) {
				n := standIn.taps.Load()
				return n == 0, fmt.Sprintf("%d taps", n)
			})
		}
		poll.WaitFor(t, ctx, "a Captured Event saying why the tap stopped", 30*time.Second, func() (bool, string) {
			evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=den,reason=Captured"})
			if err != nil {
				return false, err.Error()
			}
			for _, e := range evs.Items {
				if strings.Contains(e.Message, `stopped: Sink "den" is disconnected`) {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d events", len(evs.Items))
		})
		setConnected(t, ctx, dynAdmin, "den", metav1.ConditionTrue, "MonitorPresent", "the monitor's ELD is valid")
	})

	t.Run("documents", func(t *testing.T) {
		resp := get(t, ctx, https, base+captureapi.OpenAPIPath, listener)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != captureapi.MediaTypeOpenAPI || !bytes.Contains(body, []byte(`"openapi": "3.1.0"`)) {
			t.Errorf("openapi: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		resp = get(t, ctx, https, base+captureapi.OpenAPIPath, listener, "If-None-Match", resp.Header.Get("ETag"))
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match: %d", resp.StatusCode)
		}
	})

	t.Run("events", func(t *testing.T) {
		poll.WaitFor(t, ctx, "a Normal Captured Event on the Sink naming the listener", 30*time.Second, func() (bool, string) {
			evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=kitchen,reason=Captured"})
			if err != nil {
				return false, err.Error()
			}
			for _, e := range evs.Items {
				if e.InvolvedObject.Kind == "Sink" && e.Type == corev1.EventTypeNormal && strings.Contains(e.Message, "listener") {
					t.Logf("Event: %s", e.Message)
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d events", len(evs.Items))
		})
	})

	t.Run("metrics", func(t *testing.T) {
		mfs, err := reg.Gather()
		must(t, err)
		seen := map[string]bool{}
		for _, mf := range mfs {
			seen[mf.GetName()] = true
		}
		for _, name := range []string{"audio_api_requests_total", "audio_api_request_seconds", "audio_api_streams_active", "audio_api_certificate_expiry_seconds"} {
			if !seen[name] {
				t.Errorf("no %s", name)
			}
		}
	})

	t.Run("kubeconfig token", func(t *testing.T) {
		resp := get(t, ctx, https, tap, listenerKube)
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n < 1024 {
			t.Errorf("a token for the API server's audience: %d, %d bytes", resp.StatusCode, n)
		}
	})

	t.Run("cli", func(t *testing.T) { checkCLI(t, ctx, c, dynAdmin, addr, listenerKube, nobodyKube(t, ctx, c)) })
	t.Run("certificates", func(t *testing.T) { checkCertificates(t, ctx, c, captureToken) })
	// Last: it spends this client address's share of token reviews.
	t.Run("forged tokens", func(t *testing.T) { checkForgedTokens(t, ctx, https, tap, listener, reviews) })
}

// checkMinted reads what audio-api minted at start.
func checkMinted(t *testing.T, ctx context.Context, c *harness.Cluster, ns string) {
	sec, err := c.Client().CoreV1().Secrets(ns).Get(ctx, audioapi.ServingSecret, metav1.GetOptions{})
	must(t, err)
	if sec.Type != corev1.SecretTypeTLS {
		t.Errorf("%s type %s", audioapi.ServingSecret, sec.Type)
	}
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt", "ca.key"} {
		if len(sec.Data[k]) == 0 {
			t.Errorf("%s has no %s", audioapi.ServingSecret, k)
		}
	}
	cm, err := c.Client().CoreV1().ConfigMaps(ns).Get(ctx, audioapi.CAConfigMap, metav1.GetOptions{})
	must(t, err)
	if cm.Data["ca.crt"] != string(sec.Data["ca.crt"]) || len(cm.Data) != 1 {
		t.Errorf("ConfigMap %s holds %v, want the CA alone", audioapi.CAConfigMap, cm.Data)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(sec.Data["ca.crt"])
	verify := func(what string, certPEM []byte, name string) {
		b, _ := pem.Decode(certPEM)
		if b == nil {
			t.Errorf("%s: no PEM", what)
			return
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		must(t, err)
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name}); err != nil {
			t.Errorf("%s for %s: %v", what, name, err)
		}
	}
	verify("audio-api's leaf", sec.Data["tls.crt"], "audio-api."+ns+".svc")
	capture, err := c.Client().CoreV1().Secrets(ns).Get(ctx, audioapi.CaptureSecret, metav1.GetOptions{})
	must(t, err)
	verify("the capture leaf", capture.Data["tls.crt"], audioapi.CaptureServerName)
	if !bytes.Equal(capture.Data["ca.crt"], sec.Data["ca.crt"]) || len(capture.Data["ca.key"]) != 0 {
		t.Errorf("%s: ca.crt differs or it carries the CA key", audioapi.CaptureSecret)
	}
	// A second start adopts what is stored.
	m, err := (&audioapi.CertConfig{Client: c.Client(), Namespace: ns, Service: "audio-api"}).Sync(ctx)
	must(t, err)
	if string(m.CAPEM) != string(sec.Data["ca.crt"]) || !m.Managed {
		t.Error("a second Sync minted a new CA")
	}
	// The running audio-api publishes the CA again when the ConfigMap is
	// deleted or its ca.crt edited, without a new CA.
	cms := c.Client().CoreV1().ConfigMaps(ns)
	republished := func(what string) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, err := cms.Get(ctx, audioapi.CAConfigMap, metav1.GetOptions{})
			if err == nil && got.Data["ca.crt"] == string(sec.Data["ca.crt"]) {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("ConfigMap %s %s: not published again within 30s (last: %v)", audioapi.CAConfigMap, what, err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	must(t, cms.Delete(ctx, audioapi.CAConfigMap, metav1.DeleteOptions{}))
	republished("deleted")
	cm, err = cms.Get(ctx, audioapi.CAConfigMap, metav1.GetOptions{})
	must(t, err)
	cm.Data["ca.crt"] = "edited"
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	must(t, err)
	republished("edited")
}

// checkCLI runs the kubectl plugin's binary as a person would, dialling
// audio-api directly: this control plane has no kubelet to port-forward
// through, and the kubelet tier proves the port-forward.
func checkCLI(t *testing.T, ctx context.Context, c *harness.Cluster, dyn dynamic.Interface, addr, listener, nobody string) {
	bin := child.BuildCommand(t, "github.com/liken-sh/operators/cmd/kubectl-liken-audio")
	run := func(token string, args ...string) (string, string, error) {
		kc := c.Kubeconfig()
		if token != "" {
			kc = tokenKubeconfig(t, c, token)
		}
		cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig=" + kc, "--api-address=" + addr, "--force"}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	out := filepath.Join(t.TempDir(), "now.wav")
	if _, stderr, err := run(listener, "capture", "kitchen", "-t", "0,0.5", "-o", out); err != nil {
		t.Fatalf("capture: %v\n%s", err, stderr)
	}
	data, err := os.ReadFile(out)
	must(t, err)
	if !bytes.HasPrefix(data, []byte("RIFF")) || len(data) < 10*1024 {
		t.Errorf("captured %d bytes", len(data))
	}
	// Refused: the server's detail, a non-zero exit, and the file as it was.
	must(t, os.WriteFile(out, []byte("kept"), 0o644))
	_, stderr, err := run(nobody, "capture", "kitchen", "-o", out)
	if err == nil || !strings.Contains(stderr, `may not get sinks/audio "kitchen"`) {
		t.Errorf("capture without the grant: %v\n%s", err, stderr)
	}
	if kept, _ := os.ReadFile(out); string(kept) != "kept" {
		t.Errorf("a refused capture changed the output file to %q", kept)
	}
	if _, stderr, err := run(listener, "capture", "dark", "-o", out); err == nil || !strings.Contains(stderr, `Sink "dark" is disconnected: no monitor answers on this port`) {
		t.Errorf("capture of a disconnected Sink: %v\n%s", err, stderr)
	}
	// A capture that audio-api ends, since its Sink became disconnected:
	// what arrived is kept, the reason is said, and the exit is non-zero.
	setConnected(t, ctx, dyn, "den", metav1.ConditionTrue, "MonitorPresent", "the monitor's ELD is valid")
	cmd := exec.CommandContext(ctx, bin, "--kubeconfig="+tokenKubeconfig(t, c, listener), "--api-address="+addr, "--force", "capture", "den")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	pipe, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	head := make([]byte, 8<<10)
	if _, err := io.ReadFull(pipe, head); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("capture den: %v\n%s", err, errOut.String())
	}
	setConnected(t, ctx, dyn, "den", metav1.ConditionFalse, "NoMonitor", "no monitor answers on this port")
	rest, _ := io.ReadAll(pipe)
	err = cmd.Wait()
	if err == nil || !strings.Contains(errOut.String(), `audio-api ended the capture: Sink "den" is disconnected`) || !bytes.HasPrefix(head, []byte("RIFF")) {
		t.Errorf("capture of a Sink that became disconnected: %v after %d bytes\n%s", err, len(head)+len(rest), errOut.String())
	}
	setConnected(t, ctx, dyn, "den", metav1.ConditionTrue, "MonitorPresent", "the monitor's ELD is valid")
	if _, stderr, err := run(listener, "capture", "kitchen", "--format", "mp3"); err == nil || !strings.Contains(stderr, "--format") {
		t.Errorf("--format mp3: %v %s", err, stderr)
	}
	stdout, stderr, err := run("", "list")
	if err != nil || !strings.Contains(stdout, "KIND") || !strings.Contains(stdout, "kitchen") || !strings.Contains(stdout, "node-a") {
		t.Errorf("list: %v\n%s%s", err, stdout, stderr)
	}
	t.Logf("list:\n%s", stdout)
	stdout, _, err = run("", "__complete", "capture", "kit")
	if err != nil || !strings.Contains(stdout, "kitchen") || strings.Contains(stdout, "desk-mic") {
		t.Errorf("completing a Sink name: %v %q", err, stdout)
	}
	stdout, _, err = run("", "__complete", "capture", "--source", "")
	if err != nil || !strings.Contains(stdout, "desk-mic") {
		t.Errorf("completing a Source name: %v %q", err, stdout)
	}
}

// nobodyKube is a kubeconfig token of a ServiceAccount bound to the
// plugin's Role but not to audio-capture-viewer: it reaches audio-api and
// may not listen.
func nobodyKube(t *testing.T, ctx context.Context, c *harness.Cluster) string {
	tok := serviceAccountToken(t, ctx, c, "default", "nobody", "https://kubernetes.default.svc")
	bindClient(t, ctx, c, "default", "nobody")
	return tok
}

// tokenKubeconfig writes a kubeconfig for c that authenticates with token
// alone.
func tokenKubeconfig(t *testing.T, c *harness.Cluster, token string) string {
	t.Helper()
	rc := c.RESTConfig()
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: e2e
  user:
    token: %s
contexts:
- name: e2e
  context: {cluster: e2e, user: e2e}
current-context: e2e
`, rc.Host, base64.StdEncoding.EncodeToString(rc.CAData), token)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, os.WriteFile(path, []byte(data), 0o600))
	return path
}

// checkCertificates: two replicas starting at once end on one CA; a
// Secret cert-manager keeps (no ca.key) is served as it is and nothing is
// signed; a leaf due for renewal is renewed while a tap streams through
// the old one, which goes on to its end.
func checkCertificates(t *testing.T, ctx context.Context, c *harness.Cluster, captureToken string) {
	admin := c.Client()
	mkns := func(name string) {
		_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		must(t, err)
	}

	t.Run("race", func(t *testing.T) {
		mkns("race")
		results := make(chan *audioapi.Material, 2)
		for range 2 {
			go func() {
				m, err := (&audioapi.CertConfig{Client: admin, Namespace: "race", Service: "audio-api"}).Sync(ctx)
				if err != nil {
					t.Error(err)
				}
				results <- m
			}()
		}
		a, b := <-results, <-results
		if a == nil || b == nil {
			return
		}
		if !bytes.Equal(a.CAPEM, b.CAPEM) {
			t.Error("two replicas racing ended on two CAs")
		}
		cm, err := admin.CoreV1().ConfigMaps("race").Get(ctx, audioapi.CAConfigMap, metav1.GetOptions{})
		must(t, err)
		if cm.Data["ca.crt"] != string(a.CAPEM) {
			t.Error("the published CA is not the one both replicas serve")
		}
	})

	t.Run("cert-manager", func(t *testing.T) {
		mkns("managed")
		// A Secret as cert-manager writes it: a leaf and its CA, no CA key.
		seed := &audioapi.CertConfig{Client: admin, Namespace: "seed", Service: "audio-api"}
		mkns("seed")
		_, err := seed.Sync(ctx)
		must(t, err)
		src, err := admin.CoreV1().Secrets("seed").Get(ctx, audioapi.ServingSecret, metav1.GetOptions{})
		must(t, err)
		managed := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: audioapi.ServingSecret, Namespace: "managed",
			Annotations: map[string]string{"cert-manager.io/certificate-name": "audio-api"}},
			Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": src.Data["tls.crt"], "tls.key": src.Data["tls.key"], "ca.crt": src.Data["ca.crt"]}}
		stored, err := admin.CoreV1().Secrets("managed").Create(ctx, managed, metav1.CreateOptions{})
		must(t, err)
		m, err := (&audioapi.CertConfig{Client: admin, Namespace: "managed", Service: "audio-api"}).Sync(ctx)
		must(t, err)
		if m.Managed || !bytes.Equal(m.CAPEM, src.Data["ca.crt"]) {
			t.Errorf("managed Secret: Managed %v", m.Managed)
		}
		after, err := admin.CoreV1().Secrets("managed").Get(ctx, audioapi.ServingSecret, metav1.GetOptions{})
		must(t, err)
		if after.ResourceVersion != stored.ResourceVersion {
			t.Error("audio-api rewrote a Secret someone else manages")
		}
		if _, err := admin.CoreV1().Secrets("managed").Get(ctx, audioapi.CaptureSecret, metav1.GetOptions{}); err == nil {
			t.Error("audio-api signed a capture leaf without a CA key")
		}
		// A broken CA key is an error naming it, and nothing is overwritten.
		src = src.DeepCopy()
		src.Data["ca.key"] = []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n")
		broken, err := admin.CoreV1().Secrets("seed").Update(ctx, src, metav1.UpdateOptions{})
		must(t, err)
		if _, err := seed.Sync(ctx); err == nil || !strings.Contains(err.Error(), "ca.key") {
			t.Errorf("a broken ca.key: %v", err)
		}
		if again, _ := admin.CoreV1().Secrets("seed").Get(ctx, audioapi.ServingSecret, metav1.GetOptions{}); again.ResourceVersion != broken.ResourceVersion {
			t.Error("a Secret with a broken CA key was overwritten")
		}
	})

	t.Run("rotation", func(t *testing.T) {
		const ns = "rotation"
		mkns(ns)
		dir := t.TempDir()
		tokenFile := filepath.Join(dir, "token")
		must(t, os.WriteFile(tokenFile, []byte(captureToken), 0o600))
		dyn, err := dynamic.NewForConfig(c.RESTConfig())
		must(t, err)
		// Leaves of 8 s, renewed when under a third is left.
		addr := startAudioAPI(t, ctx, audioapi.Config{Client: admin, Objects: dyn, Namespace: ns, CaptureTokenFile: tokenFile, Version: "e2e",
			Certs: audioapi.CertConfig{LeafValidity: 8 * time.Second}, CertCheck: 300 * time.Millisecond})
		standIn := &standInCapture{client: admin, ns: ns, token: captureToken}
		fakeOperatorPod(t, ctx, c, ns, "audio-operator-r", "node-r", standIn.start(t))
		createEndpoint(t, ctx, dyn, "Sink", "rotating", "node-r")
		rc := c.RESTConfig()
		cert, err := tls.X509KeyPair(rc.CertData, rc.KeyData)
		must(t, err)
		serving := func() *big.Int {
			conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
			must(t, err)
			defer conn.Close()
			return conn.ConnectionState().PeerCertificates[0].SerialNumber
		}
		first := serving()
		resp := get(t, ctx, clientFor(t, ctx, c, ns, &cert), "https://"+addr+"/v1/audio/sinks/rotating/audio.wav?t=0,9", "")
		if resp.StatusCode != 200 {
			t.Fatalf("tap: %d", resp.StatusCode)
		}
		var n atomic.Int64
		done := make(chan error, 1)
		began := time.Now()
		go func() {
			k, err := io.Copy(io.Discard, resp.Body)
			n.Store(k)
			done <- err
		}()
		poll.WaitFor(t, ctx, "the serving leaf renewed", 30*time.Second, func() (bool, string) { return serving().Cmp(first) != 0, "same serial" })
		t.Logf("serving leaf renewed while the tap streams")
		// A new connection is served the new leaf and verifies.
		probe := get(t, ctx, clientFor(t, ctx, c, ns, &cert), "https://"+addr+captureapi.Root, "")
		probe.Body.Close()
		if probe.StatusCode != 200 {
			t.Errorf("discovery over the renewed leaf: %d", probe.StatusCode)
		}
		if err := <-done; err != nil {
			t.Errorf("the tap through the old leaf ended with %v after %d bytes", err, n.Load())
		}
		resp.Body.Close()
		if d := time.Since(began); d < 8*time.Second {
			t.Errorf("the 9 s tap ended after %s (%d bytes)", d, n.Load())
		}
	})
}
