// SPDX-License-Identifier: Apache-2.0

package audioapi

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/captureapi"
)

// Audience is the audience a token sent to audio-api must be meant for
// (TokenReview spec.audiences); CaptureAudience is the one audio-api's
// own projected token carries to the capture containers.
const (
	Audience        = "audio-api"
	CaptureAudience = "audio-capture"
)

// headerTimeout bounds the wait for the capture container's headers,
// past the span's begin.
const headerTimeout = 10 * time.Second

// idleTimeout ends a tap body that brought no byte for this long after
// the span's begin. Before begin the capture container has sent its
// headers and the format's header (a WAV's 44 bytes) and holds the
// samples back, so the wait for begin does not count. A variable so
// that a test need not wait 30 s.
var idleTimeout = 30 * time.Second

// Config configures [Serve].
type Config struct {
	// Client makes the TokenReviews, SubjectAccessReviews, Events and
	// pod and Secret reads, as audio-api's ServiceAccount.
	Client kubernetes.Interface
	// Objects reads Sinks and Sources.
	Objects dynamic.Interface
	// Namespace is audio-api's (POD_NAMESPACE): its Secrets, its
	// ConfigMap and the audio operator's pods.
	Namespace string
	// Service is audio-api's Service name, "audio-api" if empty.
	Service string
	// CaptureTokenFile is audio-api's projected token for the capture
	// containers (audience CaptureAudience), read again for every tap
	// since the kubelet rotates it.
	CaptureTokenFile string
	// PublicBase, if set, is the origin the OpenAPI document's servers
	// name (https://audio.example.com).
	PublicBase string
	// Version is the release, for ETags and liken_build_info.
	Version string
	// Registerer takes the metrics; nil registers none.
	Registerer prometheus.Registerer
	// Certs overrides the certificate lifetimes and clock (Client,
	// Namespace and Service are filled in); CertCheck is the Keeper's
	// Interval.
	Certs     CertConfig
	CertCheck time.Duration
	// Ready, if set, is called once the listener serves.
	Ready func()
}

// server is one running audio-api.
type server struct {
	cfg      Config
	keeper   *Keeper
	authn    *Authenticator
	pods     *Pods
	metrics  *metrics
	recorder record.EventRecorder
	upstream atomic.Pointer[http.Transport]
}

// Serve runs audio-api on lis until ctx ends: it settles the TLS material
// (minting what is absent), starts the client CA watch and the pod
// informer, then answers HTTPS. Errors: the certificates could not be
// settled, the informer never synced, or the listener failed.
func Serve(ctx context.Context, cfg Config, lis net.Listener) error {
	if cfg.Service == "" {
		cfg.Service = "audio-api"
	}
	s := &server{cfg: cfg, metrics: newMetrics(cfg.Registerer)}
	cc := cfg.Certs
	cc.Client, cc.Namespace, cc.Service = cfg.Client, cfg.Namespace, cfg.Service
	s.keeper = &Keeper{Config: cc, Interval: cfg.CertCheck, OnChange: s.materialChanged}
	if err := s.keeper.Start(ctx); err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	s.metrics.expiry(func() time.Time { return s.keeper.Current().NotAfter })
	s.authn = &Authenticator{Client: cfg.Client, Audience: Audience}
	s.authn.Start(ctx)
	pods, err := StartPods(ctx, cfg.Client, cfg.Namespace)
	if err != nil {
		return err
	}
	s.pods = pods
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cfg.Client.CoreV1().Events("")})
	defer b.Shutdown()
	s.recorder = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "audio-api"})

	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: s.keeper.GetCertificate,
			// Verified by the Authenticator against the cluster's client
			// CA, which changes while the listener stays.
			ClientAuth: tls.RequestClientCert,
		},
		ErrorLog: nil,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if cfg.Ready != nil {
		cfg.Ready()
	}
	klog.FromContext(ctx).Info("audio-api serving", "address", lis.Addr().String(), "namespace", cfg.Namespace)
	err = srv.ServeTLS(lis, "", "")
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// materialChanged builds the transport to the capture containers on the
// CA that signs their leaf; taps already relayed keep the old one.
func (s *server) materialChanged(m *Material) {
	pool := m.CAPool
	t := &http.Transport{
		TLSClientConfig: &tls.Config{
			MinVersion: tls.VersionTLS12,
			RootCAs:    pool,
			ServerName: CaptureServerName,
		},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: 5 * time.Second,
	}
	if old := s.upstream.Swap(t); old != nil {
		go func() { time.Sleep(time.Minute); old.CloseIdleConnections() }()
	}
}

// request is one request's state, for its log line and metrics.
type request struct {
	id, template, user, object string
	status                     int
	bytes                      int64
	headers, stream            time.Duration
}

func newRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ServeHTTP answers one request: route, method, authentication,
// authorization, query, then the object and its node, in that order, so
// that every refusal comes before anything is read on the caller's
// behalf.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rq := &request{id: newRequestID(), template: "unmatched"}
	rw := &recorder{ResponseWriter: w, start: start}
	defer func() {
		rq.status, rq.bytes = rw.status, rw.bytes
		if !rw.headerAt.IsZero() {
			rq.headers = rw.headerAt.Sub(start)
			rq.stream = time.Since(rw.headerAt)
		}
		s.metrics.observe(rq, r.Method)
		klog.FromContext(r.Context()).Info("Request", "id", rq.id, "method", r.Method, "route", rq.template,
			"user", rq.user, "object", rq.object, "status", rq.status, "bytes", rq.bytes,
			"headerSeconds", rq.headers.Seconds(), "streamSeconds", rq.stream.Seconds())
	}()
	s.serve(rw, r, rq)
}

func (s *server) problem(w http.ResponseWriter, r *http.Request, rq *request, p *captureapi.Problem) {
	p.WithInstance(r.URL.EscapedPath(), rq.id).Write(w)
}

func (s *server) serve(w *recorder, r *http.Request, rq *request) {
	w.Header().Set("X-Request-Id", rq.id)
	m, p := captureapi.ParsePath(r.URL.EscapedPath())
	if p != nil {
		s.problem(w, r, rq, p)
		return
	}
	rq.template = m.Route.Template
	rq.object = m.Name
	w.Header().Set("Link", links(m))
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodOptions:
		w.Header().Set("Allow", captureapi.Allow)
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		w.Header().Set("Allow", captureapi.Allow)
		s.problem(w, r, rq, captureapi.NewProblem(captureapi.ProblemMethodNotAllowed,
			"%s is not a method of %s; it answers %s.", r.Method, m.Route.Template, captureapi.Allow))
		return
	}

	u, err := s.authn.Authenticate(r.Context(), r)
	if err != nil {
		var ae *AuthError
		var te *ThrottledError
		if errors.As(err, &te) {
			p := captureapi.NewProblem(captureapi.ProblemTooManyRequests, "%s.", te.Error())
			p.RetryAfter = max(1, int(math.Ceil(te.RetryAfter.Seconds())))
			s.problem(w, r, rq, p)
			return
		}
		if !errors.As(err, &ae) {
			s.problem(w, r, rq, captureapi.NewProblem(captureapi.ProblemUnavailable, "Authentication could not be checked: %v.", err))
			return
		}
		if ae.Missing {
			w.Header().Set("WWW-Authenticate", `Bearer realm="audio-api"`)
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="audio-api", error="invalid_token"`)
		}
		s.problem(w, r, rq, captureapi.NewProblem(captureapi.ProblemUnauthenticated, "%s.", strings.TrimSuffix(ae.Reason, ".")))
		return
	}
	rq.user = u.Name

	switch m.Route.Kind {
	case captureapi.KindDiscovery, captureapi.KindOpenAPI:
		s.document(w, r, rq, m)
		return
	}

	acc := Access{Resource: m.Route.Resource.Plural, Name: m.Name}
	if m.Route.Kind == captureapi.KindTap {
		acc.Subresource = captureapi.Aspect
	}
	allowed, reason, err := Authorize(r.Context(), s.cfg.Client, u, acc)
	if err != nil {
		s.problem(w, r, rq, captureapi.NewProblem(captureapi.ProblemUnavailable, "Authorization could not be checked: %v.", err))
		return
	}
	if !allowed {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="audio-api", error="insufficient_scope", scope=%q`, acc.String()))
		detail := fmt.Sprintf("User %q may not get %s %q in API group %s", u.Name, acc.String(), m.Name, captureapi.Group)
		if reason != "" {
			detail += ": " + reason
		}
		s.problem(w, r, rq, captureapi.NewProblem(captureapi.ProblemForbidden, "%s.", detail))
		return
	}

	// The query and Accept, before anything is read.
	upstreamPath, rawQuery := r.URL.EscapedPath(), ""
	var format captureapi.Format
	var q captureapi.TapQuery
	if m.Route.Kind == captureapi.KindTap {
		candidates := captureapi.Formats
		if f, ok := m.Format(); ok {
			candidates = []captureapi.Format{f}
		}
		var p *captureapi.Problem
		if format, p = captureapi.Negotiate(r.Header.Values("Accept"), candidates, m.TapPath()); p != nil {
			s.problem(w, r, rq, p)
			return
		}
		if q, p = captureapi.ParseTapQuery(r.URL.RawQuery, format); p != nil {
			s.problem(w, r, rq, p)
			return
		}
		upstreamPath = captureapi.TapPath(m.Route.Resource, m.Name, &format)
		rawQuery = q.Encode()
		w.Header().Set("Vary", "Accept")
		w.Header().Set("Content-Location", upstreamPath)
	} else if p := captureapi.CheckNoQuery(r.URL.RawQuery); p != nil {
		s.problem(w, r, rq, p)
		return
	}

	obj, p := s.object(r.Context(), m)
	if p != nil {
		s.problem(w, r, rq, p)
		return
	}
	node, _, _ := unstructured.NestedString(obj.Object, "status", "node")
	if node == "" {
		s.problem(w, r, rq, captureapi.NewProblem(captureapi.ProblemAway,
			"%s %q has no status.node: no audio operator has reported it on any node, so there is nothing to tap.", m.Route.Resource.Kind, m.Name))
		return
	}
	if m.Route.Kind == captureapi.KindTap {
		if p := disconnected(m, obj); p != nil {
			s.problem(w, r, rq, p)
			return
		}
	}
	up, err := s.pods.On(node)
	if err != nil {
		s.problem(w, r, rq, captureapi.NewProblem(captureapi.ProblemUnavailable, "%s %q is on node %s, and %v.",
			m.Route.Resource.Kind, m.Name, node, strings.TrimPrefix(err.Error(), "no capture container answers on node "+node+": ")))
		return
	}
	if r.Method == http.MethodHead && m.Route.Kind == captureapi.KindTap {
		// Headers only, and nothing started on the node.
		w.Header().Set("Content-Type", format.MediaType)
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Accept-Ranges", "none")
		w.WriteHeader(http.StatusOK)
		return
	}
	s.relay(w, r, rq, relayTarget{
		match: m, obj: obj, node: node, up: up, path: upstreamPath, rawQuery: rawQuery,
		format: format, span: q.Span, user: u,
	})
}

// object reads the route's Sink or Source as audio-api.
func (s *server) object(ctx context.Context, m captureapi.Match) (*unstructured.Unstructured, *captureapi.Problem) {
	gvr := audiov1.SinksResource
	if m.Route.Resource == captureapi.Sources {
		gvr = audiov1.SourcesResource
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	obj, err := s.cfg.Objects.Resource(gvr).Get(ctx, m.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, captureapi.NewProblem(captureapi.ProblemNotFound, "No %s is named %q.", m.Route.Resource.Kind, m.Name)
	case err != nil:
		return nil, captureapi.NewProblem(captureapi.ProblemUnavailable, "Reading %s %q: %v.", m.Route.Resource.Kind, m.Name, err)
	}
	return obj, nil
}

// captureToken reads audio-api's projected token for the capture
// containers.
func (s *server) captureToken() (string, error) {
	if s.cfg.CaptureTokenFile == "" {
		return "", errors.New("no capture token file is configured (CAPTURE_TOKEN_FILE)")
	}
	b, err := os.ReadFile(s.cfg.CaptureTokenFile)
	if err != nil {
		return "", fmt.Errorf("reading the capture token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("the capture token file %s is empty", s.cfg.CaptureTokenFile)
	}
	return tok, nil
}

// recorder is the ResponseWriter a request is answered through: it keeps
// the status, the bytes of body and when the headers went out.
type recorder struct {
	http.ResponseWriter
	start    time.Time
	status   int
	bytes    int64
	headerAt time.Time
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status, w.headerAt = code, time.Now()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach Flush.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// document answers the discovery and OpenAPI documents, which need
// authentication only.
func (s *server) document(w *recorder, r *http.Request, rq *request, m captureapi.Match) {
	if p := captureapi.CheckNoQuery(r.URL.RawQuery); p != nil {
		s.problem(w, r, rq, p)
		return
	}
	body, typ := captureapi.Discovery(), captureapi.MediaTypeJSON
	if m.Route.Kind == captureapi.KindOpenAPI {
		body, typ = captureapi.OpenAPI(s.cfg.PublicBase, s.cfg.Version), captureapi.MediaTypeOpenAPI
	}
	etag := fmt.Sprintf(`"%s-%x"`, s.cfg.Version, crc(body))
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "no-cache")
	if inm := r.Header.Get("If-None-Match"); inm != "" && (inm == "*" || strings.Contains(inm, etag)) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", typ)
	h.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// links is the Link header every answer carries (RFC 8288, RFC 8631).
func links(m captureapi.Match) string {
	l := fmt.Sprintf(`<%s>; rel="service-desc"; type="%s", <%s>; rel="service-doc"`,
		captureapi.OpenAPIPath, captureapi.MediaTypeOpenAPI, captureapi.ServiceDoc)
	if m.Name != "" {
		l += fmt.Sprintf(`, <https://kubernetes.default.svc/apis/%s/%s/%s>; rel="describedby"`,
			audiov1.GroupVersion.String(), m.Route.Resource.Plural, m.Name)
	}
	return l
}

func crc(b []byte) uint32 { return crc32.ChecksumIEEE(b) }
