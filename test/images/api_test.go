// SPDX-License-Identifier: Apache-2.0

package images_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/liken-sh/operators/internal/audioapi"
	"github.com/liken-sh/operators/test/e2e/harness"
)

// apiRBACKinds are the kinds of deploy/audio/api.yaml this test applies:
// audio-api's identity and grants, not its Deployment and Service, which
// the sandbox stands in for.
var apiRBACKinds = map[string]bool{"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true}

// TestAudioAPIImage runs audio-api from the audio operator's image as
// deploy/audio/api.yaml runs it (`audio-operator api`, the Deployment's
// environment, a read-only root, no capability, its ServiceAccount's
// token and the projected capture token), against a real API server with
// the RBAC of api.yaml and nothing more: it mints the CA and its leaf
// into audio-api-tls, publishes the CA in audio-api-ca and signs the
// capture leaf into audio-capture-server; its probes answer on the
// metrics port; and over TLS it trusts as a client would (the CA from the
// ConfigMap, the Service's name) it refuses a request without credentials
// (401), authenticates a bearer token (TokenReview) and a client
// certificate of the cluster's CA (extension-apiserver-authentication),
// and refuses an info request the caller is not granted (403, from a
// SubjectAccessReview).
func TestAudioAPIImage(t *testing.T) {
	img := unpack(t, "audio-operator")
	ctx := context.Background()
	cluster, err := harness.Start(ctx, harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	c := cluster.Client()
	const ns = "liken-system"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	applyAPIRBAC(t, ctx, cluster, ns)

	token := func(sa string, aud ...string) string {
		t.Helper()
		tr, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{Audiences: aud}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	dir := t.TempDir()
	saDir, capDir := filepath.Join(dir, "serviceaccount"), filepath.Join(dir, "capture-token")
	mkdirs(t, saDir, capDir)
	files := map[string][]byte{
		filepath.Join(saDir, "token"):     []byte(token("audio-api")),
		filepath.Join(saDir, "ca.crt"):    cluster.RESTConfig().CAData,
		filepath.Join(saDir, "namespace"): []byte(ns),
		filepath.Join(capDir, "token"):    []byte(token("audio-api", "audio-capture")),
	}
	for path, content := range files {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	api, err := url.Parse(cluster.Host())
	if err != nil {
		t.Fatal(err)
	}
	apiAddr, metricsAddr := freePort(t), freePort(t)
	// The Deployment's environment; the addresses are free loopback
	// ports, as the sandbox shares the host's network.
	env := []string{
		"POD_NAMESPACE=" + ns, "API_ADDRESS=" + apiAddr, "METRICS_ADDRESS=" + metricsAddr,
		"CAPTURE_TOKEN_FILE=/var/run/secrets/audio.liken.sh/capture/token",
		"KUBERNETES_SERVICE_HOST=" + api.Hostname(), "KUBERNETES_SERVICE_PORT=" + api.Port(),
	}
	d := sandbox{image: img, env: env, binds: []bind{
		{host: saDir, path: "/var/run/secrets/kubernetes.io/serviceaccount", readOnly: true},
		{host: capDir, path: "/var/run/secrets/audio.liken.sh/capture", readOnly: true},
	}}.start(t, "audio-api", 5*time.Minute, audioOperator, "api")

	probe := func(path string) error {
		resp, err := http.Get("http://" + metricsAddr + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", path, resp.Status)
		}
		return nil
	}
	waitFor(t, "audio-api's /healthz", 30*time.Second, func() error { return probe("/healthz") }, d)
	waitFor(t, "audio-api's /readyz", time.Minute, func() error { return probe("/readyz") }, d)

	serving, err := c.CoreV1().Secrets(ns).Get(ctx, audioapi.ServingSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt", "ca.key"} {
		if len(serving.Data[k]) == 0 {
			t.Errorf("Secret %s has no %s", audioapi.ServingSecret, k)
		}
	}
	capture, err := c.CoreV1().Secrets(ns).Get(ctx, audioapi.CaptureSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, audioapi.CAConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["ca.crt"] == "" || !bytes.Equal([]byte(cm.Data["ca.crt"]), serving.Data["ca.crt"]) || !bytes.Equal(capture.Data["ca.crt"], serving.Data["ca.crt"]) {
		t.Fatalf("ConfigMap %s, Secret %s and Secret %s do not carry the same CA", audioapi.CAConfigMap, audioapi.ServingSecret, audioapi.CaptureSecret)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(cm.Data["ca.crt"])) {
		t.Fatalf("ConfigMap %s: ca.crt is no PEM certificate", audioapi.CAConfigMap)
	}

	// A client as kubectl liken audio is one: the published CA, the
	// Service's name.
	tlsConfig := &tls.Config{RootCAs: pool, ServerName: "audio-api." + ns + ".svc"}
	get := func(path, bearer string, cert *tls.Certificate) (int, string) {
		t.Helper()
		cfg := tlsConfig.Clone()
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 30 * time.Second}
		req, _ := http.NewRequest(http.MethodGet, "https://"+apiAddr+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return resp.StatusCode, resp.Header.Get("Content-Type") + " " + string(body)
	}
	if code, body := get("/v1/audio", "", nil); code != http.StatusUnauthorized {
		t.Errorf("no credentials: %d %s, want 401", code, body)
	}
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "listener"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	listener := token("listener")
	if code, body := get("/v1/audio", listener, nil); code != http.StatusOK {
		t.Errorf("a ServiceAccount's token: %d %s, want 200", code, body)
	}
	if code, body := get("/v1/audio/sinks/kitchen", listener, nil); code != http.StatusForbidden {
		t.Errorf("info without the grant: %d %s, want 403", code, body)
	}
	kc, err := cluster.UserKubeconfig("carol")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	var cert tls.Certificate
	for _, ai := range cfg.AuthInfos {
		if cert, err = tls.X509KeyPair(ai.ClientCertificateData, ai.ClientKeyData); err != nil {
			t.Fatal(err)
		}
	}
	if code, body := get("/v1/audio", "", &cert); code != http.StatusOK {
		t.Errorf("a client certificate of the cluster's CA: %d %s, want 200", code, body)
	}
	if d.exited() {
		t.Fatalf("audio-api exited: %v", d.err)
	}
}

// applyAPIRBAC applies the RBAC kinds of deploy/audio/api.yaml in ns with
// the control plane's kubectl.
func applyAPIRBAC(t *testing.T, ctx context.Context, cluster *harness.Cluster, ns string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), "deploy", "audio", "api.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var keep [][]byte
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("deploy/audio/api.yaml: %v", err)
		}
		if apiRBACKinds[meta.Kind] {
			keep = append(keep, doc)
		}
	}
	if len(keep) < 5 {
		t.Fatalf("deploy/audio/api.yaml: %d RBAC documents", len(keep))
	}
	path := filepath.Join(t.TempDir(), "api-rbac.yaml")
	if err := os.WriteFile(path, bytes.Join(keep, []byte("\n---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := cluster.Kubectl(ctx, "apply", "-n", ns, "-f", path); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// The grant is the base's; nothing here widens it.
	if _, err := cluster.Client().RbacV1().ClusterRoleBindings().Get(ctx, "audio-api-auth-delegator", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}

// freePort returns a free port on the loopback, host:port.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
