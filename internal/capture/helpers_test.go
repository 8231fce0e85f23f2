package capture

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/internal/metricsserver"
)

// testCA is a CA that signs capture leaves, as audio-api's does.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// leaf returns a PEM certificate and key for names, signed by ca.
func (ca *testCA) leaf(t testing.TB, names ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}

// writeSecretVolume updates dir as the kubelet updates a Secret volume
// (pkg/volume/util/atomic_writer.go): the files go into a fresh
// timestamped directory, "..data" is swapped to it by a rename, and each
// file name is a symlink through "..data".
func writeSecretVolume(t testing.TB, dir string, files map[string][]byte) {
	t.Helper()
	ts := filepath.Join(dir, ".."+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(ts, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for name := range files {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err != nil {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// staticReviewer accepts one token.
type staticReviewer string

func (r staticReviewer) Review(_ context.Context, token string) *captureapi.Problem {
	if token == string(r) {
		return nil
	}
	return captureapi.NewProblem(captureapi.ProblemUnauthenticated, "The token was refused: test.")
}

const testToken = "audio-api-token"

// testServer is a Server on a loopback port with its TLS directory.
type testServer struct {
	*Server
	addr   string
	tlsDir string
	cancel context.CancelFunc
	done   chan error
}

func startServer(t testing.TB, cfg Config, reviewer Reviewer) *testServer {
	t.Helper()
	if cfg.TLSDir == "" {
		cfg.TLSDir = t.TempDir()
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "liken-system"
	}
	s, err := New(cfg, reviewer, metricsserver.NewRegistry(), "test", klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{Server: s, addr: l.Addr().String(), tlsDir: cfg.TLSDir, cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ts.done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ts
}

// client returns an HTTP client that trusts ca (nil: any certificate) and
// verifies ServerName, as audio-api dials the container.
func (ts *testServer) client(ca *testCA) *http.Client {
	cfg := &tls.Config{ServerName: ServerName}
	if ca == nil {
		cfg.InsecureSkipVerify = true
	} else {
		pool := x509.NewCertPool()
		pool.AddCert(ca.cert)
		cfg.RootCAs = pool
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
}

func (ts *testServer) url(path string) string { return "https://" + ts.addr + path }

// request sends method path with the test token (unless token is "-")
// and the Accept values.
func request(t testing.TB, c *http.Client, method, url, token string, accept ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "-" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for _, a := range accept {
		req.Header.Add("Accept", a)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// children returns the pids of this process's children whose command
// name is one of names.
func children(names ...string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		comm := s[open+1 : close]
		fields := strings.Fields(s[close+1:])
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		if ppid != self {
			continue
		}
		for _, n := range names {
			if comm == n {
				out = append(out, pid)
			}
		}
	}
	return out
}

// waitNoChildren waits up to 3 s until this process has no child named
// in names; it fails the test naming the ones left.
func waitNoChildren(t testing.TB, names ...string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := children(names...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("children left running: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
