// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/test/poll"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/liken-sh/operators/test/secretvolume"
)

// served returns the leaf the server presents.
func served(t *testing.T, addr string) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, ServerName: ServerName})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, 30*time.Second, cond)
}

func status(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestLeafReload: the container serves its own certificate and is not
// ready until the Secret volume holds a leaf; the leaf is then served
// without a restart, a leaf another CA signed is refused (the one before
// stays, the refusal is counted), and a rotation is served while a tap
// that began before it streams on.
func TestLeafReload(t *testing.T) {
	w := &world{pw: startPipeWire(t)}
	ts := startServer(t, Config{Remote: w.pw.Remote()}, staticReviewer(testToken))
	any := ts.client(nil)
	if !strings.Contains(served(t, ts.addr).Subject.CommonName, "self-signed") {
		t.Fatalf("before the Secret: %v", served(t, ts.addr).Subject)
	}
	if got := status(t, any, ts.url("/readyz")); got != 503 {
		t.Fatalf("/readyz before the leaf: %d", got)
	}
	if got := status(t, any, ts.url("/healthz")); got != 200 {
		t.Fatalf("/healthz: %d", got)
	}
	if testutil.ToFloat64(ts.m.ready) != 0 {
		t.Fatal("audio_capture_ready 1 before the leaf")
	}

	// The kubelet fills the optional volume once audio-api has minted.
	ca := secretvolume.NewCA(t, "audio-api CA")
	crt, key := ca.Leaf(t, ServerName)
	secretvolume.WriteSecretVolume(t, ts.tlsDir, map[string][]byte{FileCert: crt, FileKey: key, FileCA: ca.PEM})
	waitFor(t, "the leaf served", func() bool { return served(t, ts.addr).Issuer.CommonName == "audio-api CA" })
	w.client = ts.client(ca)
	if got := status(t, w.client, ts.url("/readyz")); got != 200 {
		t.Fatalf("/readyz with the leaf: %d", got)
	}
	if testutil.ToFloat64(ts.m.ready) != 1 {
		t.Fatal("audio_capture_ready 0 with the leaf")
	}
	first := served(t, ts.addr).SerialNumber

	// A leaf signed by another CA, beside the old ca.crt, is refused.
	other := secretvolume.NewCA(t, "someone else's CA")
	crt2, key2 := other.Leaf(t, ServerName)
	secretvolume.WriteSecretVolume(t, ts.tlsDir, map[string][]byte{FileCert: crt2, FileKey: key2, FileCA: ca.PEM})
	waitFor(t, "the refusal counted", func() bool {
		return testutil.ToFloat64(ts.m.failures.WithLabelValues(reasonCertificate)) == 1
	})
	if got := served(t, ts.addr).SerialNumber; got.Cmp(first) != 0 {
		t.Fatalf("a leaf of another CA replaced the served one")
	}
	if err := ts.Certificates().Load(); err == nil || !strings.Contains(err.Error(), "not signed by the CA") {
		t.Errorf("Load: %v", err)
	}
	// A key that is not the certificate's, and a leaf for another name.
	_, key3 := ca.Leaf(t, ServerName)
	crt4, key4 := ca.Leaf(t, "audio-api")
	for name, files := range map[string]map[string][]byte{
		"mismatched key": {FileCert: crt, FileKey: key3, FileCA: ca.PEM},
		"another name":   {FileCert: crt4, FileKey: key4, FileCA: ca.PEM},
	} {
		dir := t.TempDir()
		secretvolume.WriteSecretVolume(t, dir, files)
		c, _ := NewCertificates(dir, nil)
		if err := c.Load(); err == nil || c.Minted() {
			t.Errorf("%s: loaded", name)
		}
	}

	// A rotation while a tap streams: the tap goes on, new connections
	// get the new leaf.
	resp := request(t, w.client, "GET", ts.url("/v1/audio/sinks/"+sinkName+"/audio.wav?t=0,3"), testToken)
	if resp.StatusCode != 200 {
		t.Fatalf("tap: %d", resp.StatusCode)
	}
	crt5, key5 := ca.Leaf(t, ServerName)
	secretvolume.WriteSecretVolume(t, ts.tlsDir, map[string][]byte{FileCert: crt5, FileKey: key5, FileCA: ca.PEM})
	waitFor(t, "the rotated leaf served", func() bool { return served(t, ts.addr).SerialNumber.Cmp(first) != 0 })
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || len(body) != wavHeaderSize+3*sinkRate*sinkChans*2 {
		t.Fatalf("the tap across the rotation: %d bytes, %v", len(body), err)
	}
}

// TestConfigFromEnv: the container's environment as deploy/audio/operator.yaml sets it,
// and each bad value named.
func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{EnvAddress: ":9201", EnvTaps: "4", EnvTLSDir: "/var/run/audio-capture-tls",
		EnvPipeWireDir: "/var/run/audio.liken.sh", EnvXDGDir: "/var/run/audio.liken.sh", EnvNamespace: "liken-system"}
	get := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := ConfigFromEnv(get(env))
	if err != nil || c.Address != ":9201" || c.Taps != 4 || c.TLSDir != "/var/run/audio-capture-tls" || c.Remote.RuntimeDir != "/var/run/audio.liken.sh" ||
		c.CallerUser() != "system:serviceaccount:liken-system:audio-api" {
		t.Fatalf("%+v, %v", c, err)
	}
	for k, v := range map[string]string{EnvTaps: "four", EnvTLSDir: "relative", EnvPipeWireDir: "run"} {
		bad := map[string]string{}
		for k2, v2 := range env {
			bad[k2] = v2
		}
		bad[k] = v
		if _, err := ConfigFromEnv(get(bad)); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
	delete(env, EnvPipeWireDir)
	delete(env, EnvXDGDir)
	if _, err := ConfigFromEnv(get(env)); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("no runtime dir: %v", err)
	}
}
