// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/internal/metricsserver"
	"github.com/liken-sh/operators/test/poll"
	"github.com/liken-sh/operators/test/secretvolume"
)

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
	// WirePlumber links a tap's recorder within Config's default of 3 s
	// on an idle machine, not on a loaded one: the tests' bound is
	// generous, and only a link that never comes reaches it.
	if cfg.LinkDeadline == 0 {
		cfg.LinkDeadline = 30 * time.Second
	}
	if cfg.GraphTimeout == 0 {
		// A pw-dump on a loaded host has taken more than the 5 s a
		// deployed container allows.
		cfg.GraphTimeout = time.Minute
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
func (ts *testServer) client(ca *secretvolume.CA) *http.Client {
	cfg := &tls.Config{ServerName: ServerName}
	if ca == nil {
		cfg.InsecureSkipVerify = true
	} else {
		pool := x509.NewCertPool()
		pool.AddCert(ca.Cert)
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

// waitNoChildren waits up to 30 s until this process has no child named
// in names; it fails the test naming the ones left.
func waitNoChildren(t testing.TB, names ...string) {
	t.Helper()
	poll.WaitFor(t, context.Background(), "no children "+strings.Join(names, ", "), 30*time.Second, func() (bool, string) {
		left := children(names...)
		return len(left) == 0, fmt.Sprintf("left running: %v", left)
	})
}
