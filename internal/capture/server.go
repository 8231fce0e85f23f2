// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/internal/metricsserver"
)

// Server answers the capture container's routes.
type Server struct {
	cfg      Config
	certs    *Certificates
	reviewer Reviewer
	reg      *prometheus.Registry
	m        *metrics
	taps     chan struct{}
	logger   klog.Logger
}

// New returns a Server for cfg that admits the callers reviewer accepts,
// serving its certificates from cfg.TLSDir and its metrics (with
// liken_build_info{component="audio-capture",version}) from reg. Errors:
// no certificate could be made.
func New(cfg Config, reviewer Reviewer, reg *prometheus.Registry, version string, logger klog.Logger) (*Server, error) {
	s := &Server{cfg: cfg.resolved(), reviewer: reviewer, reg: reg, m: newMetrics(reg), logger: logger}
	s.taps = make(chan struct{}, s.cfg.Taps)
	metricsserver.BuildInfo(reg, "audio-capture", version)
	certs, err := NewCertificates(s.cfg.TLSDir, func(err error) {
		switch {
		case err == nil:
			s.m.ready.Set(1)
		case !errors.Is(err, ErrNoLeaf):
			s.m.failures.WithLabelValues(reasonCertificate).Inc()
		}
	})
	if err != nil {
		return nil, err
	}
	s.certs = certs
	return s, nil
}

// Certificates returns the server's certificates.
func (s *Server) Certificates() *Certificates { return s.certs }

// Serve answers on l over TLS until ctx ends, then shuts down (taps in
// flight are stopped with their requests). The leaf is watched for as
// long.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	ctx = klog.NewContext(ctx, s.logger)
	go s.certs.Watch(ctx)
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		TLSConfig:         &tls.Config{GetCertificate: s.certs.GetCertificate, MinVersion: tls.VersionTLS12},
		BaseContext:       func(net.Listener) context.Context { return ctx },
		// Handshake refusals (a client that does not trust the
		// self-signed certificate) and the like, through klog.
		ErrorLog: klog.NewStandardLogger("WARNING"),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(shut) != nil {
			_ = srv.Close()
		}
	}()
	err := srv.ServeTLS(l, "", "")
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Handler returns the routes: /healthz, /readyz, /metrics and the API's.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.certs.Minted() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "serving a self-signed certificate until the leaf is in "+s.cfg.TLSDir+"\n")
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("/metrics", metricsserver.Handler(s.reg))
	mux.HandleFunc(captureapi.Root, s.serveAPI)
	mux.HandleFunc(captureapi.Root+"/", s.serveAPI)
	return mux
}

// requestID is the request's X-Request-Id (audio-api sets it), else a
// fresh one.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 64 {
		return id
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// serveAPI answers the API's routes, checks cheapest first: route,
// method, authentication, Accept and query, the graph, then the
// information or the tap.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	accepted := time.Now()
	id := requestID(r)
	path := r.URL.EscapedPath()
	fail := func(p *captureapi.Problem) { p.WithInstance(r.URL.Path, id).Write(w) }
	m, p := captureapi.ParsePath(path)
	if p != nil {
		fail(p)
		return
	}
	if captureapi.Method(w, r, id) {
		return
	}
	if p := s.authenticate(w, r); p != nil {
		fail(p)
		return
	}
	switch m.Route.Kind {
	case captureapi.KindInfo:
		if p := captureapi.CheckNoQuery(r.URL.RawQuery); p != nil {
			fail(p)
			return
		}
		s.serveInfo(w, r, m, fail)
	case captureapi.KindTap:
		s.serveTap(w, r, m, id, accepted, fail)
	default:
		fail(captureapi.NewProblem(captureapi.ProblemNotFound, "The capture container serves taps and endpoint information; %s is served by audio-api.", r.URL.Path))
	}
}

// authenticate checks the bearer token; a 401 carries WWW-Authenticate
// (RFC 6750 section 3).
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) *captureapi.Problem {
	const realm = `Bearer realm="audio-capture"`
	auth := r.Header.Get("Authorization")
	scheme, token, _ := strings.Cut(auth, " ")
	token = strings.TrimSpace(token)
	if auth == "" || !strings.EqualFold(scheme, "Bearer") || token == "" {
		w.Header().Set("WWW-Authenticate", realm)
		return captureapi.NewProblem(captureapi.ProblemUnauthenticated, "No bearer token; only %s may call the capture container.", s.cfg.CallerUser())
	}
	p := s.reviewer.Review(r.Context(), token)
	if p != nil && p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", realm+`, error="invalid_token"`)
	}
	return p
}

func (s *Server) resolve(ctx context.Context, m captureapi.Match) (target, *captureapi.Problem) {
	gctx, cancel := context.WithTimeout(ctx, s.cfg.GraphTimeout)
	defer cancel()
	g, err := s.cfg.Remote.Dump(gctx)
	if err != nil {
		s.m.failures.WithLabelValues(reasonConnect).Inc()
		return target{}, captureapi.NewProblem(captureapi.ProblemUnavailable, "PipeWire's graph could not be read: %v", err)
	}
	t, p := resolve(g, m.Route.Resource, m.Name)
	if p != nil && p.OfType(captureapi.ProblemNoNode) {
		s.m.failures.WithLabelValues(reasonTarget).Inc()
	}
	return t, p
}

func (s *Server) serveInfo(w http.ResponseWriter, r *http.Request, m captureapi.Match, fail func(*captureapi.Problem)) {
	t, p := s.resolve(r.Context(), m)
	if p != nil {
		fail(p)
		return
	}
	info := captureapi.Info{Kind: m.Route.Resource.Kind, Name: m.Name, Node: t.node.Name, NodeID: t.node.ID, State: t.node.State,
		Rate: t.rate, Channels: t.channels, Positions: t.position, Monitor: t.monitor}
	for _, f := range captureapi.Formats {
		info.Formats = append(info.Formats, f.MediaType)
	}
	body, _ := json.Marshal(info)
	w.Header().Set("Content-Type", captureapi.MediaTypeJSON)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(append(body, '\n'))
}

func (s *Server) serveTap(w http.ResponseWriter, r *http.Request, m captureapi.Match, id string, accepted time.Time, fail func(*captureapi.Problem)) {
	candidates := captureapi.Formats
	if f, fixed := m.Format(); fixed {
		candidates = []captureapi.Format{f}
	}
	f, p := captureapi.Negotiate(r.Header.Values("Accept"), candidates, m.TapPath())
	if p != nil {
		fail(p)
		return
	}
	q, p := captureapi.ParseTapQuery(r.URL.RawQuery, f)
	if p != nil {
		fail(p)
		return
	}
	select {
	case s.taps <- struct{}{}:
		defer func() { <-s.taps }()
	default:
		s.m.failures.WithLabelValues(reasonLimit).Inc()
		fail(captureapi.NewProblem(captureapi.ProblemCaptureBusy, "All %d taps of this machine are in use; try again shortly.", s.cfg.Taps))
		return
	}
	t, p := s.resolve(r.Context(), m)
	if p != nil {
		fail(p)
		return
	}
	if t.channels > f.MaxChannels {
		// Negotiate again among the formats that carry this node's
		// channels: a fixed route has none left, a negotiated one may.
		carrying := captureapi.Carrying(candidates, t.channels)
		if len(carrying) == 0 {
			p := captureapi.NewProblem(captureapi.ProblemNotAcceptable, "%s carries at most %d channels, and %s has %d.", f.MediaType, f.MaxChannels, t.node.Name, t.channels)
			for _, c := range captureapi.Carrying(captureapi.Formats, t.channels) {
				p.Acceptable = append(p.Acceptable, captureapi.Acceptable{Type: c.MediaType, Href: m.TapPath() + "." + c.Name})
			}
			fail(p)
			return
		}
		chosen := f
		if f, p = captureapi.Negotiate(r.Header.Values("Accept"), carrying, m.TapPath()); p != nil {
			p.Detail += fmt.Sprintf(" (%s has %d channels; %s carries at most %d.)", t.node.Name, t.channels, chosen.MediaType, chosen.MaxChannels)
			fail(p)
			return
		}
	}
	if p := captureapi.CheckBitrate(q.Bitrate, t.channels); p != nil {
		fail(p)
		return
	}
	h := w.Header()
	captureapi.SetTapHeaders(h, f)
	h.Set("Content-Location", captureapi.TapPath(m.Route.Resource, m.Name, &f))
	h.Set("Content-Disposition", captureapi.ContentDisposition(m.Name, f, accepted))
	h.Set("X-Audio-Rate", strconv.Itoa(t.rate))
	h.Set("X-Audio-Channels", strconv.Itoa(t.channels))
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	sess, p, reason := startSession(r.Context(), s.cfg, t, f, q, accepted)
	if p != nil {
		s.m.failures.WithLabelValues(reason).Inc()
		for _, k := range []string{"Content-Location", "Content-Disposition", "Accept-Ranges", "X-Audio-Rate", "X-Audio-Channels"} {
			h.Del(k)
		}
		fail(p)
		return
	}
	s.stream(w, r, m, f, q, t, sess, id, accepted)
}

// stream relays the session's body and ends the tap: cleanly (the final
// chunk) when the span was delivered whole and the encoder exited 0,
// else by aborting the response so the client sees a cut body, not a
// short recording that looks whole.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, m captureapi.Match, f captureapi.Format, q captureapi.TapQuery,
	t target, sess *session, id string, accepted time.Time) {
	aspect := m.Route.Resource.Subresource
	s.m.active.WithLabelValues(aspect).Inc()
	defer s.m.active.WithLabelValues(aspect).Dec()
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	started := time.Now()

	// A client that leaves stops the children at once.
	left := make(chan struct{})
	go func() {
		select {
		case <-r.Context().Done():
			sess.stop()
		case <-left:
		}
	}()
	var sent int64
	var writeErr error
	buf := make([]byte, 256<<10)
	for {
		n, err := sess.body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				writeErr = werr
				break
			}
			sent += int64(n)
			if werr := rc.Flush(); werr != nil {
				writeErr = werr
				break
			}
		}
		if err != nil {
			break
		}
	}
	close(left)
	clientLeft := writeErr != nil || r.Context().Err() != nil
	if clientLeft {
		sess.stop()
	}
	whole, code, endErr := sess.finish()
	elapsed := time.Since(started)
	s.m.bytes.WithLabelValues(aspect, f.Name).Add(float64(sent))
	s.m.seconds.WithLabelValues(aspect, f.Name).Add(elapsed.Seconds())
	outcome := "ended"
	switch {
	case clientLeft:
		outcome = "client-left"
	case !whole:
		outcome = "cut"
		if code > 0 {
			s.m.failures.WithLabelValues(reasonEncoder).Inc()
		}
	}
	kv := []any{"request", id, "resource", m.Route.Resource.Kind, "name", m.Name, "node", t.node.Name, "format", f.Name,
		"rate", t.rate, "channels", t.channels, "span", q.Span.String(), "bytes", sent, "encoderExit", code,
		"outcome", outcome, "firstByte", started.Sub(accepted).Round(time.Millisecond), "seconds", elapsed.Round(time.Millisecond).Seconds()}
	if endErr != nil && !clientLeft {
		kv = append(kv, "reason", endErr.Error())
	}
	s.logger.Info("Tap", kv...)
	if outcome == "cut" {
		// net/http ends the response without its final chunk (HTTP/1.1)
		// or with RST_STREAM (HTTP/2) and logs nothing for this value.
		panic(http.ErrAbortHandler)
	}
}

// Run is the container: it serves cfg's address until ctx ends. reviewer
// checks callers. Errors: the address cannot be listened on, or the
// server fails.
func Run(ctx context.Context, cfg Config, reviewer Reviewer, version string) error {
	logger := klog.FromContext(ctx)
	s, err := New(cfg, reviewer, metricsserver.NewRegistry(), version, logger)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return fmt.Errorf("listen on %s=%q: %w", EnvAddress, cfg.Address, err)
	}
	logger.Info("Capture listening", "address", l.Addr().String(), "taps", s.cfg.Taps, "tlsDir", s.cfg.TLSDir,
		"pipewire", s.cfg.Remote.RuntimeDir, "caller", s.cfg.CallerUser())
	return s.Serve(ctx, l)
}
