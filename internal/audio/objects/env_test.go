// SPDX-License-Identifier: Apache-2.0

package objects

import (
	"context"
	"github.com/liken-sh/operators/test/poll"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/test/e2e/harness"
)

// One control plane, with the CRDs installed, serves every test of the
// package; tests keep apart by node and object names.
var shared = harness.Shared{
	Options: harness.Options{WithoutScheduler: true, WithoutControllerManager: true},
	Setup: func(ctx context.Context, c *harness.Cluster) error {
		return c.ApplyCRDs(ctx, "deploy/audio/crds")
	},
}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// apiServer returns the shared control plane with deploy/audio/crds.
func apiServer(t *testing.T) *harness.Cluster { return shared.Get(t) }

// admin is a dynamic client with the cluster's admin credentials: the
// "other writer" behind a store's back.
func admin(t *testing.T) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(apiServer(t).RESTConfig())
	must(t, err)
	return d
}

// call is one HTTP request a client made and the status it got (0 for
// no response).
type call struct {
	method, path string
	code         int
}

// recorder notes every request made through a wrapped transport.
type recorder struct {
	mu    sync.Mutex
	calls []call
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (r *recorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		c := call{method: req.Method, path: req.URL.Path}
		if resp != nil {
			c.code = resp.StatusCode
		}
		r.mu.Lock()
		r.calls = append(r.calls, c)
		r.mu.Unlock()
		return resp, err
	})
}

// mark is where the next request will be noted.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// about returns the requests since mark on the object name of resource
// (its status included), in order.
func (r *recorder) about(mark int, resource, name string) []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []call
	for _, c := range r.calls[mark:] {
		if strings.HasSuffix(c.path, "/"+resource+"/"+name) || strings.HasSuffix(c.path, "/"+resource+"/"+name+"/status") ||
			(c.method == http.MethodPost && strings.HasSuffix(c.path, "/"+resource)) {
			out = append(out, c)
		}
	}
	return out
}

// recordedClient is a dynamic client with admin credentials whose
// requests rec notes.
func recordedClient(t *testing.T, rec *recorder) dynamic.Interface {
	t.Helper()
	cfg := apiServer(t).RESTConfig()
	cfg.Wrap(rec.wrap)
	d, err := dynamic.NewForConfig(cfg)
	must(t, err)
	return d
}

// startStore runs a Store for node on client until the test ends.
func startStore(t *testing.T, client dynamic.Interface, node string, onRestart func(string)) *Store {
	t.Helper()
	s, err := New(Options{Client: client, Node: node, OnWatchRestart: onRestart})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	must(t, s.Start(ctx, 30*time.Second))
	return s
}

// stored returns the store's copy of the object name of kind k.
func stored(s *Store, k Kind, name string) (*unstructured.Unstructured, bool) {
	obj, ok, _ := s.informers[k.Name].GetStore().GetByKey(name)
	if !ok {
		return nil, false
	}
	u, ok := obj.(*unstructured.Unstructured)
	return u, ok
}

// waitStored waits until the store holds name at resourceVersion rv, or
// does not hold it at all when rv is "".
func waitStored(t *testing.T, s *Store, k Kind, name, rv string) {
	t.Helper()
	waitFor(t, "the store's "+k.Name+" "+name+" at resourceVersion "+rv, 30*time.Second, func() (bool, string) {
		u, ok := stored(s, k, name)
		if !ok {
			return rv == "", "absent"
		}
		return u.GetResourceVersion() == rv, "at " + u.GetResourceVersion()
	})
}

// makeStale puts old into the store in place of what the watch
// delivered, as if the watch had not yet brought the newer version: the
// one way to hold a store stale for as long as a test needs.
func makeStale(t *testing.T, s *Store, k Kind, old *unstructured.Unstructured) {
	t.Helper()
	must(t, s.informers[k.Name].GetStore().Update(old.DeepCopy()))
}

// waitFor polls ok every 50 ms until it holds or timeout passes.
func waitFor(t *testing.T, what string, timeout time.Duration, ok func() (bool, string)) {
	t.Helper()
	poll.WaitFor(t, context.Background(), what, timeout, ok)
}

// getSink reads the Sink name with admin credentials.
func getSink(t *testing.T, name string) (*audiov1.Sink, *unstructured.Unstructured) {
	t.Helper()
	u, err := admin(t).Resource(audiov1.SinksResource).Get(context.Background(), name, metav1.GetOptions{})
	must(t, err)
	var s audiov1.Sink
	must(t, fromUnstructured(u, &s))
	return &s, u
}

// hangingServer listens on loopback, accepts connections and never
// answers: an API server that is up but stuck. It returns its address and
// the number of connections accepted so far.
func hangingServer(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	var (
		accepted atomic.Int32
		mu       sync.Mutex
		conns    []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String(), &accepted
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := ln.Addr().String()
	must(t, ln.Close())
	return addr
}

// plainClient is a dynamic client for an http:// address.
func plainClient(t *testing.T, addr string) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(&rest.Config{Host: "http://" + addr})
	must(t, err)
	return d
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
