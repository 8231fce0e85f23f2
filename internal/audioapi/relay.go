// SPDX-License-Identifier: Apache-2.0

package audioapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/captureapi"
)

// relayTarget is a request authorized and resolved to a capture
// container.
type relayTarget struct {
	match          captureapi.Match
	obj            *unstructured.Unstructured
	node           string
	up             Upstream
	path, rawQuery string
	format         captureapi.Format
	span           captureapi.Span
	user           *User
}

// hopHeaders are not relayed (RFC 9110 section 7.6.1).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// relay sends the request to the capture container and streams its
// answer back: status and headers unchanged, the body flushed as it
// arrives. A body the capture container cut is cut here too (no final
// chunk), so a client never takes a short tap for a whole one.
func (s *server) relay(w *recorder, r *http.Request, rq *request, t relayTarget) {
	tok, err := s.captureToken()
	if err != nil {
		s.metrics.failure("token")
		s.problem(w, r, rq, captureapi.NewProblem(captureapi.ProblemUnavailable, "audio-api has no credential for the capture containers: %v.", err))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	u := url.URL{Scheme: "https", Host: t.up.Addr, RawPath: t.path, RawQuery: t.rawQuery}
	u.Path, _ = url.PathUnescape(t.path)
	req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), nil)
	if err != nil {
		s.problem(w, r, rq, captureapi.NewProblem(captureapi.ProblemInternal, "Building the request to the capture container: %v.", err))
		return
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("X-Request-Id", rq.id)
	req.Header.Set("User-Agent", "audio-api")
	if t.match.Route.Kind == captureapi.KindTap {
		req.Header.Set("Accept", t.format.MediaType)
	} else if a := r.Header.Values("Accept"); len(a) > 0 {
		req.Header["Accept"] = a
	}

	// The capture container answers at once or, at the latest, at the
	// span's begin; past that, headerTimeout.
	beginAt := time.Now().Add(t.span.Begin)
	timedOut := make(chan struct{})
	timer := time.AfterFunc(headerTimeout+t.span.Begin, func() { close(timedOut); cancel() })
	resp, err := s.upstream.Load().RoundTrip(req)
	headersInTime := timer.Stop()
	if err != nil {
		s.problem(w, r, rq, s.upstreamProblem(err, t, !headersInTime, r.Context().Err() != nil))
		return
	}
	defer resp.Body.Close()

	if resp.StatusCode >= 300 {
		// A refusal must be one of this API's problem documents; anything
		// else is the capture container misbehaving.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10+1))
		if _, perr := captureapi.ParseProblem(resp.StatusCode, resp.Header.Get("Content-Type"), body); perr != nil {
			s.metrics.failure("upstream")
			s.problem(w, r, rq, captureapi.NewProblem(captureapi.ProblemUpstreamFailed,
				"The capture container of pod %s answered %d with something other than a problem document (%v).", t.up.Pod, resp.StatusCode, perr))
			return
		}
		copyHeaders(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(body)
		return
	}

	copyHeaders(w.Header(), resp.Header)
	if t.match.Route.Kind == captureapi.KindTap {
		w.Header().Set("Vary", "Accept")
		w.Header().Set("Content-Location", t.path)
		if w.Header().Get("Content-Disposition") == "" {
			stamp := strings.ReplaceAll(time.Now().UTC().Format(time.RFC3339), ":", "-")
			w.Header().Set("Content-Disposition", fmt.Sprintf(`inline; filename="%s-%s.%s"`, t.match.Name, stamp, t.format.Name))
		}
		s.metrics.streams.WithLabelValues(captureapi.Aspect).Inc()
		defer s.metrics.streams.WithLabelValues(captureapi.Aspect).Dec()
	}
	var ended <-chan *captureapi.Problem
	if t.match.Route.Kind == captureapi.KindTap && t.match.Route.Resource == captureapi.Sinks {
		ended = s.followConnected(ctx, t)
	}
	w.WriteHeader(resp.StatusCode)
	streamStart := time.Now()
	n, cut, why := s.stream(ctx, w, resp.Body, ended, beginAt)
	if t.match.Route.Kind == captureapi.KindTap && n > 0 {
		s.captured(t, n, time.Since(streamStart), cut, why)
	}
	if why != nil {
		klog.FromContext(r.Context()).Info("Tap stopped", "id", rq.id, "object", t.match.Name, "reason", why.Detail, "bounded", t.span.Bounded())
		if !t.span.Bounded() {
			// An open-ended tap ends cleanly, with what was recorded
			// until now and why it ended.
			w.Header().Set(http.TrailerPrefix+captureapi.TrailerEnded, captureapi.HeaderSafe(why.Detail))
			return
		}
	}
	if cut && r.Context().Err() == nil {
		// Withhold the final chunk: the body ends in an error for the
		// client, as it did for us.
		panic(http.ErrAbortHandler)
	}
}

// stream copies body to w, flushing every read, until the body ends or
// idleTimeout passes with no byte, not counting the time until beginAt
// (the span's begin, before which the capture container sends nothing
// past the format's header). cut is true when the body did not end
// cleanly. A problem received on ended (nil: none is awaited) stops the
// body there and is returned as why.
func (s *server) stream(ctx context.Context, w *recorder, body io.ReadCloser, ended <-chan *captureapi.Problem, beginAt time.Time) (n int64, cut bool, why *captureapi.Problem) {
	rc := http.NewResponseController(w)
	quiet := func() time.Duration { return idleTimeout + max(0, time.Until(beginAt)) }
	idle := time.AfterFunc(quiet(), func() { _ = body.Close() })
	defer idle.Stop()
	var stopped atomic.Pointer[captureapi.Problem]
	done := make(chan struct{})
	defer close(done)
	if ended != nil {
		go func() {
			select {
			case p := <-ended:
				stopped.Store(p)
				_ = body.Close()
			case <-done:
			}
		}()
	}
	buf := make([]byte, 32<<10)
	for {
		k, err := body.Read(buf)
		if k > 0 && stopped.Load() == nil {
			idle.Reset(quiet())
			m, werr := w.Write(buf[:k])
			n += int64(m)
			if werr != nil {
				return n, true, nil
			}
			_ = rc.Flush()
		}
		if p := stopped.Load(); p != nil {
			return n, true, p
		}
		if errors.Is(err, io.EOF) {
			return n, false, nil
		}
		if err != nil || ctx.Err() != nil {
			return n, true, nil
		}
	}
}

// captured records the Captured Event on the tapped object; why, if
// set, is what stopped the tap.
func (s *server) captured(t relayTarget, n int64, d time.Duration, cut bool, why *captureapi.Problem) {
	ref := &corev1.ObjectReference{
		APIVersion: audiov1.GroupVersion.String(), Kind: t.match.Route.Resource.Kind,
		Name: t.obj.GetName(), UID: t.obj.GetUID(), ResourceVersion: t.obj.GetResourceVersion(),
	}
	ended := "ended"
	switch {
	case why != nil:
		ended = "stopped: " + why.Detail
	case cut:
		ended = "was cut short"
	}
	s.recorder.Eventf(ref, corev1.EventTypeNormal, "Captured", "%s tapped by %s as %s on node %s: %d bytes in %s, %s",
		t.match.Route.Resource.Kind, t.user.Name, t.format.Name, t.node, n, d.Round(time.Millisecond), ended)
}

// upstreamProblem turns a failed round trip into the problem the caller
// gets.
func (s *server) upstreamProblem(err error, t relayTarget, timedOut, clientLeft bool) *captureapi.Problem {
	where := fmt.Sprintf("the capture container of pod %s on node %s (%s)", t.up.Pod, t.node, t.up.Addr)
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	var verify *tls.CertificateVerificationError
	switch {
	case clientLeft:
		return captureapi.NewProblem(captureapi.ProblemUnavailable, "The client left before %s answered.", where)
	case timedOut:
		s.metrics.failure("timeout")
		p := captureapi.NewProblem(captureapi.ProblemUpstreamTimeout, "%s sent no headers within %s.", capitalize(where), headerTimeout+t.span.Begin)
		return p
	case errors.As(err, &unknown), errors.As(err, &invalid), errors.As(err, &hostname), errors.As(err, &verify):
		s.metrics.failure("certificate")
		return captureapi.NewProblem(captureapi.ProblemUnavailable,
			"%s presented a certificate audio-api does not trust (%v): it serves one of its own until the leaf in Secret %s signed by audio-api's CA reaches it.",
			capitalize(where), err, CaptureSecret)
	case errors.Is(err, syscall.ECONNREFUSED):
		s.metrics.failure("connect")
		return captureapi.NewProblem(captureapi.ProblemUnavailable, "%s refused the connection.", capitalize(where))
	}
	var ne net.Error
	if errors.As(err, &ne) {
		s.metrics.failure("connect")
		return captureapi.NewProblem(captureapi.ProblemUnavailable, "%s could not be reached: %v.", capitalize(where), err)
	}
	s.metrics.failure("upstream")
	return captureapi.NewProblem(captureapi.ProblemUpstreamFailed, "%s did not answer HTTP: %v.", capitalize(where), err)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func copyHeaders(dst, src http.Header) {
	for k, vs := range src {
		dst[k] = append([]string(nil), vs...)
	}
	for _, h := range hopHeaders {
		dst.Del(h)
	}
}
