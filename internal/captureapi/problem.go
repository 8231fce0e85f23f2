// SPDX-License-Identifier: Apache-2.0

package captureapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// ProblemType is one problem type of RFC 9457 section 3.1: the URI that names
// it, its title and the status it is answered with.
type ProblemType struct {
	// URI is the type's identifier, the "type" member.
	URI string
	// Title is the short summary, the "title" member.
	Title string
	// Status is the HTTP status code.
	Status int
}

// Prefixes of the problem type URIs: problems any liken API may answer
// with, and those of the audio domain.
const (
	SharedProblemBase = "https://liken.sh/problems/"
	AudioProblemBase  = "https://audio.liken.sh/problems/"
)

// The problem types of this API.
var (
	ProblemBadRequest       = ProblemType{SharedProblemBase + "bad-request", "The request is malformed", http.StatusBadRequest}
	ProblemUnauthenticated  = ProblemType{SharedProblemBase + "unauthenticated", "No valid credential", http.StatusUnauthorized}
	ProblemForbidden        = ProblemType{SharedProblemBase + "forbidden", "Not allowed", http.StatusForbidden}
	ProblemNotFound         = ProblemType{SharedProblemBase + "not-found", "No such route or object", http.StatusNotFound}
	ProblemNoNode           = ProblemType{SharedProblemBase + "no-node", "The object has no PipeWire node", http.StatusNotFound}
	ProblemMethodNotAllowed = ProblemType{SharedProblemBase + "method-not-allowed", "Method not allowed", http.StatusMethodNotAllowed}
	ProblemNotAcceptable    = ProblemType{SharedProblemBase + "not-acceptable", "No format Accept allows", http.StatusNotAcceptable}
	ProblemAway             = ProblemType{SharedProblemBase + "away", "The object is on no node", http.StatusConflict}
	ProblemUpstreamFailed   = ProblemType{SharedProblemBase + "upstream-failed", "The capture container answered badly", http.StatusBadGateway}
	ProblemCaptureBusy      = ProblemType{SharedProblemBase + "capture-busy", "Every tap is in use", http.StatusServiceUnavailable}
	ProblemTooManyRequests  = ProblemType{SharedProblemBase + "too-many-requests", "Too many credentials to check from this client", http.StatusTooManyRequests}
	ProblemUnavailable      = ProblemType{SharedProblemBase + "unavailable", "Capture is not available", http.StatusServiceUnavailable}
	ProblemUpstreamTimeout  = ProblemType{SharedProblemBase + "upstream-timeout", "The capture container did not answer in time", http.StatusGatewayTimeout}
	ProblemInternal         = ProblemType{SharedProblemBase + "internal", "Internal error", http.StatusInternalServerError}
	ProblemWrongTarget      = ProblemType{AudioProblemBase + "wrong-target", "The recording linked to another node", http.StatusInternalServerError}
	ProblemRecorderFailed   = ProblemType{AudioProblemBase + "recorder-failed", "The recorder did not start", http.StatusServiceUnavailable}
	ProblemEncoderFailed    = ProblemType{AudioProblemBase + "encoder-failed", "The encoder failed", http.StatusInternalServerError}
	// ProblemDisconnected refuses a tap of a Sink the audio operator
	// publishes as disconnected (its Connected condition False, its
	// device tainted disconnected): recording a sink's monitor starts
	// the sink, which opens its PCM, and an HDMI or DisplayPort PCM
	// opened with nothing behind it can take the converter its card's
	// connected output needs (sound/pci/hda/patch_hdmi.c,
	// hdmi_pcm_open). It also ends a running tap whose Sink becomes so.
	ProblemDisconnected = ProblemType{AudioProblemBase + "disconnected", "The output is disconnected", http.StatusConflict}
)

// ProblemTypes lists every problem type above, for documents that
// enumerate them.
var ProblemTypes = []ProblemType{
	ProblemBadRequest, ProblemUnauthenticated, ProblemForbidden, ProblemNotFound, ProblemNoNode,
	ProblemMethodNotAllowed, ProblemNotAcceptable, ProblemAway, ProblemUpstreamFailed, ProblemCaptureBusy,
	ProblemUnavailable, ProblemUpstreamTimeout, ProblemInternal, ProblemWrongTarget, ProblemRecorderFailed,
	ProblemEncoderFailed, ProblemDisconnected, ProblemTooManyRequests,
}

// DefaultRetryAfter is the Retry-After, in seconds, of a 503 that sets
// none of its own.
const DefaultRetryAfter = 5

// Acceptable is one representation a 406 offers: its media type and the
// path that serves it whatever Accept says.
type Acceptable struct {
	Type string `json:"type"`
	Href string `json:"href"`
}

// Problem is an RFC 9457 problem document, and an error.
type Problem struct {
	// Type, Title and Status are the problem type's (RFC 9457 section 3.1).
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	// Detail explains this occurrence for a person, quoting the
	// source's own text (a tool's stderr, the API server's message).
	Detail string `json:"detail,omitempty"`
	// Instance identifies the occurrence: the request's path, "#" and
	// the request id.
	Instance string `json:"instance,omitempty"`
	// Acceptable lists the representations a 406 offers.
	Acceptable []Acceptable `json:"acceptable,omitempty"`
	// RetryAfter is the Retry-After header in seconds; 0 gives a 503
	// DefaultRetryAfter and any other status none. Not in the body.
	RetryAfter int `json:"-"`
}

// NewProblem returns a problem of type t whose detail is
// fmt.Sprintf(format, args...).
func NewProblem(t ProblemType, format string, args ...any) *Problem {
	return &Problem{Type: t.URI, Title: t.Title, Status: t.Status, Detail: fmt.Sprintf(format, args...)}
}

// Error returns the detail, or the title when there is none.
func (p *Problem) Error() string {
	if p.Detail != "" {
		return p.Detail
	}
	return p.Title
}

// OfType reports whether p is of type t.
func (p *Problem) OfType(t ProblemType) bool { return p != nil && p.Type == t.URI }

// WithInstance returns a copy of p whose Instance is path, "#" and id
// (path alone with an empty id).
func (p *Problem) WithInstance(path, id string) *Problem {
	c := *p
	c.Instance = path
	if id != "" {
		c.Instance += "#" + id
	}
	return &c
}

// Write answers with p: its status, Content-Type application/problem+json,
// Cache-Control no-store, Retry-After on a 503 (and wherever RetryAfter
// is set), and the JSON body. Headers already set on w (Allow,
// WWW-Authenticate) are kept.
func (p *Problem) Write(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", MediaTypeProblem)
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Length")
	h.Del("Content-Disposition")
	retry := p.RetryAfter
	if retry == 0 && p.Status == http.StatusServiceUnavailable {
		retry = DefaultRetryAfter
	}
	if retry > 0 {
		h.Set("Retry-After", strconv.Itoa(retry))
	}
	body, _ := json.Marshal(p) // a Problem always marshals
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(body, '\n'))
}

// ErrNotProblem is wrapped by ParseProblem's errors.
var ErrNotProblem = errors.New("not a problem document")

// maxProblemBytes bounds the body ParseProblem reads.
const maxProblemBytes = 64 << 10

// ParseProblem reads a problem document answered with status and
// Content-Type contentType, as a relay or a client receives it. It fails
// (wrapping ErrNotProblem) when the type is not application/problem+json,
// the body is longer than 64 KiB, not a JSON object, or its status member
// is present and differs from status. A missing type is "about:blank"
// (RFC 9457 section 4.2.1) and a missing status is status; RetryAfter is not
// read (it is a header).
func ParseProblem(status int, contentType string, body []byte) (*Problem, error) {
	mt, _, _ := strings.Cut(contentType, ";")
	if !strings.EqualFold(strings.TrimSpace(mt), MediaTypeProblem) {
		return nil, fmt.Errorf("%w: Content-Type %q", ErrNotProblem, contentType)
	}
	if len(body) > maxProblemBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrNotProblem, len(body), maxProblemBytes)
	}
	var p Problem
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotProblem, err)
	}
	if p.Status != 0 && p.Status != status {
		return nil, fmt.Errorf("%w: status member %d, answered with %d", ErrNotProblem, p.Status, status)
	}
	if p.Type == "" {
		p.Type = "about:blank"
	}
	p.Status = status
	return &p, nil
}
