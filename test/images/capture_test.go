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
	"strconv"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/secretvolume"
)

// captureContainer runs deploy/audio/operator.yaml's capture container from the image
// (`audio-operator capture` with deploy/audio/operator.yaml's environment, the PipeWire
// runtime volume, the capture-tls Secret volume read-only and the pod's
// ServiceAccount token, in a PID namespace of its own) beside the image's
// running PipeWire and WirePlumber, against a real API server: its
// /healthz answers over TLS with its own certificate and /readyz is 503,
// the leaf written into the volume is served without a restart, and
// audio-api's token taps a declared sink in WAV and Opus through the
// image's pw-record and opusenc (FLAC, which carries at most 8 channels,
// is refused for the null device's 64).
func captureContainer(t *testing.T, img unpacked, runtime bind, sinks []pipewire.Output) {
	ctx := context.Background()
	cluster, err := harness.Start(ctx, harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	c := cluster.Client()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liken-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, sa := range []string{"audio-operator", "audio-api"} {
		if _, err := c.CoreV1().ServiceAccounts("liken-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The operator's ServiceAccount may create TokenReviews
	// (deploy/audio/rbac.yaml grants it; the built-in auth-delegator
	// role is that grant here).
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "audio-operator-tokenreviews"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "audio-operator", Namespace: "liken-system"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := func(sa string, aud ...string) string {
		tr, err := c.CoreV1().ServiceAccounts("liken-system").CreateToken(ctx, sa, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{Audiences: aud}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	dir := t.TempDir()
	saDir, tlsDir := filepath.Join(dir, "serviceaccount"), filepath.Join(dir, "capture-tls")
	mkdirs(t, saDir, tlsDir)
	for name, content := range map[string][]byte{
		"token": []byte(token("audio-operator")), "ca.crt": cluster.RESTConfig().CAData, "namespace": []byte("liken-system"),
	} {
		if err := os.WriteFile(filepath.Join(saDir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	api, err := url.Parse(cluster.Host())
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	// deploy/audio/operator.yaml's environment; the address is a free loopback port, as
	// the sandbox shares the host's network.
	env := append(append([]string{}, pipewireEnv...),
		"CAPTURE_ADDRESS="+addr, "CAPTURE_TAPS=4", "CAPTURE_TLS_DIR=/var/run/audio-capture-tls",
		"KUBERNETES_SERVICE_HOST="+api.Hostname(), "KUBERNETES_SERVICE_PORT="+api.Port())
	capture := sandbox{image: img, env: env, binds: []bind{runtime,
		{host: tlsDir, path: "/var/run/audio-capture-tls", readOnly: true},
		{host: saDir, path: "/var/run/secrets/kubernetes.io/serviceaccount", readOnly: true},
	}}.start(t, "capture container", 5*time.Minute, audioOperator, "capture")

	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(c *http.Client, path, bearer string) (int, []byte, http.Header, error) {
		req, _ := http.NewRequest("GET", "https://"+addr+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, resp.Header, err
	}
	waitFor(t, "the capture container's /healthz", 30*time.Second, func() error {
		code, _, _, err := get(insecure, "/healthz", "")
		if err != nil || code != 200 {
			return fmt.Errorf("%d %v", code, err)
		}
		return nil
	}, capture)
	if code, _, _, _ := get(insecure, "/readyz", ""); code != 503 {
		t.Fatalf("/readyz before the leaf: %d", code)
	}

	ca := secretvolume.NewCA(t, "audio-api CA")
	crt, key := ca.Leaf(t, "audio-capture")
	secretvolume.WriteSecretVolume(t, tlsDir, map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": ca.PEM})
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	trusted := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "audio-capture"}}}
	waitFor(t, "the leaf served and /readyz", time.Minute, func() error {
		code, _, _, err := get(trusted, "/readyz", "")
		if err != nil || code != 200 {
			return fmt.Errorf("%d %v", code, err)
		}
		return nil
	}, capture)

	caller := token("audio-api", "audio-capture")
	if code, body, _, _ := get(trusted, "/v1/audio/sinks/"+sinks[0].Output+"/audio.wav?t=0,1", token("audio-operator", "audio-capture")); code != 403 {
		t.Errorf("another ServiceAccount's token: %d %s", code, body)
	}
	// The null device's sinks declare no channel count and offer 64,
	// more than FLAC carries.
	if code, body, _, _ := get(trusted, "/v1/audio/sinks/"+sinks[0].Output+"/audio.flac?t=0,1", caller); code != 406 || !bytes.Contains(body, []byte("at most 8 channels")) {
		t.Errorf("FLAC of 64 channels: %d %s", code, body)
	}
	for _, tc := range []struct{ ext, magic string }{{"wav", "RIFF"}, {"opus", "OggS"}} {
		code, body, h, err := get(trusted, "/v1/audio/sinks/"+sinks[0].Output+"/audio."+tc.ext+"?t=0,1", caller)
		if err != nil || code != 200 || !bytes.HasPrefix(body, []byte(tc.magic)) {
			t.Fatalf("%s tap: %d %v, %d bytes: %.200q", tc.ext, code, err, len(body), body)
		}
		if tc.ext == "wav" {
			rate, _ := strconv.Atoi(h.Get("X-Audio-Rate"))
			ch, _ := strconv.Atoi(h.Get("X-Audio-Channels"))
			if rate == 0 || ch == 0 || len(body) != 44+rate*ch*2 {
				t.Errorf("WAV of 1 s at %d Hz, %d channels: %d bytes", rate, ch, len(body))
			}
		}
		t.Logf("%s tap from the image: %d bytes", tc.ext, len(body))
	}
}
