// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/test/e2e/harness"
)

// countingTransport counts the requests that pass through it.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int32
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

func saToken(t *testing.T, c kubernetes.Interface, name string, audiences ...string) string {
	t.Helper()
	tr, err := c.CoreV1().ServiceAccounts("liken-system").CreateToken(context.Background(), name,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{Audiences: audiences}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// expiredToken signs, with the API server's own service-account key, a
// token for sa that expired an hour ago: everything about it is right
// except the time.
func expiredToken(t *testing.T, cluster *harness.Cluster, sa *corev1.ServiceAccount) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cluster.Dir(), "pki", "sa.key"))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	var key *rsa.PrivateKey
	if k, err := x509.ParsePKCS8PrivateKey(blk.Bytes); err == nil {
		key = k.(*rsa.PrivateKey)
	} else if key, err = x509.ParsePKCS1PrivateKey(blk.Bytes); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	seg := func(v any) string {
		j, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(j)
	}
	head := seg(map[string]string{"alg": "RS256", "typ": "JWT"})
	claims := seg(map[string]any{
		"iss": "https://kubernetes.default.svc", "aud": []string{Audience},
		"sub": "system:serviceaccount:liken-system:" + sa.Name,
		"iat": now.Add(-2 * time.Hour).Unix(), "nbf": now.Add(-2 * time.Hour).Unix(), "exp": now.Add(-time.Hour).Unix(),
		"kubernetes.io": map[string]any{"namespace": "liken-system", "serviceaccount": map[string]string{"name": sa.Name, "uid": string(sa.UID)}},
	})
	sum := sha256.Sum256([]byte(head + "." + claims))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return head + "." + claims + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// TestTokenReviewAgainstTheAPIServer: only audio-api's token for the
// audience audio-capture passes the real API server's TokenReview;
// another ServiceAccount's is 403, a token for another audience and an
// expired one are 401 with the API server's reason, and only the
// accepted token is cached.
func TestTokenReviewAgainstTheAPIServer(t *testing.T) {
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
	var api *corev1.ServiceAccount
	for _, name := range []string{"audio-api", "someone"} {
		sa, err := c.CoreV1().ServiceAccounts("liken-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if name == "audio-api" {
			api = sa
		}
	}
	var calls atomic.Int32
	rc := cluster.RESTConfig()
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &calls} }
	r, err := NewTokenReviewer(rc, "system:serviceaccount:liken-system:audio-api")
	if err != nil {
		t.Fatal(err)
	}
	good := saToken(t, c, "audio-api", Audience)
	for _, tc := range []struct {
		name, token string
		status      int
		detail      string
	}{
		{"audio-api", good, 0, ""},
		{"another ServiceAccount", saToken(t, c, "someone", Audience), 403, "system:serviceaccount:liken-system:someone may not"},
		{"the API server's audience", saToken(t, c, "audio-api"), 401, "refused"},
		{"expired", expiredToken(t, cluster, api), 401, "expired"},
		{"garbage", "not.a.token", 401, "refused"},
	} {
		for range 2 {
			before := calls.Load()
			p := r.Review(ctx, tc.token)
			switch {
			case tc.status == 0 && p != nil:
				t.Errorf("%s: %v", tc.name, p)
			case tc.status != 0 && (p == nil || p.Status != tc.status || !strings.Contains(p.Detail, tc.detail)):
				t.Errorf("%s: %+v; want %d with %q", tc.name, p, tc.status, tc.detail)
			}
			if p != nil && calls.Load() == before {
				t.Errorf("%s: a refusal was answered from the cache", tc.name)
			}
		}
	}
	before := calls.Load()
	if p := r.Review(ctx, good); p != nil || calls.Load() != before {
		t.Errorf("the accepted token was reviewed again (%d calls) within its minute: %v", calls.Load()-before, p)
	}
	// The cache lasts a minute at most.
	r.now = func() time.Time { return time.Now().Add(61 * time.Second) }
	if p := r.Review(ctx, good); p != nil || calls.Load() == before {
		t.Errorf("after a minute the token was not reviewed again: %v", p)
	}

	// Through the listener: an expired token is a 401 problem naming it,
	// with the Bearer challenge.
	ts := startServer(t, Config{Remote: startPipeWire(t).Remote()}, r)
	resp := request(t, ts.client(nil), "GET", ts.url("/v1/audio/sinks/"+sinkName+"/audio"), expiredToken(t, cluster, api))
	p := readProblem(t, resp)
	if resp.StatusCode != 401 || !p.OfType(captureapi.ProblemUnauthenticated) || !strings.Contains(p.Detail, "expired") ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("expired token: %d %+v %v", resp.StatusCode, p, resp.Header)
	}
	resp = request(t, ts.client(nil), "HEAD", ts.url("/v1/audio/sinks/"+sinkName+"/audio"), good)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("audio-api's token: HEAD %d", resp.StatusCode)
	}
}
