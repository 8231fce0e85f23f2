// SPDX-License-Identifier: Apache-2.0

package captureapi

import (
	"mime"
	"net/http"
	"strings"
	"time"
)

// Method answers what the method alone decides, as every route does: an
// OPTIONS request gets 204 with Allow, and a method other than GET, HEAD
// and OPTIONS gets 405 ProblemMethodNotAllowed with Allow. It returns true
// when it answered, and false for GET and HEAD, which the caller serves
// (HEAD with the headers of GET and no body, starting nothing).
func Method(w http.ResponseWriter, r *http.Request, instanceID string) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return false
	case http.MethodOptions:
		w.Header().Set("Allow", Allow)
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	w.Header().Set("Allow", Allow)
	NewProblem(ProblemMethodNotAllowed, "%s is not served here; the methods are %s.", r.Method, Allow).
		WithInstance(r.URL.Path, instanceID).Write(w)
	return true
}

// SetTapHeaders sets the headers of a tap's successful answer in format f:
// Content-Type, Cache-Control no-store (a live recording is never the
// same twice), Accept-Ranges none and Vary Accept.
func SetTapHeaders(h http.Header, f Format) {
	h.Set("Content-Type", f.MediaType)
	h.Set("Cache-Control", "no-store")
	h.Set("Accept-Ranges", "none")
	h.Set("Vary", "Accept")
}

// Filename returns the file name a tap of the object name in format f
// begun at start is saved under: the name, the UTC time in RFC 3339 with
// its colons as dashes (portable to every file system), and f's
// extension: "kitchen-hdmi-3-2026-12-01T20-38-00Z.wav".
func Filename(name string, f Format, start time.Time) string {
	ts := strings.ReplaceAll(start.UTC().Format(time.RFC3339), ":", "-")
	return name + "-" + ts + "." + f.Name
}

// ContentDisposition returns the Content-Disposition of a tap (RFC 6266):
// inline, with Filename as the file name.
func ContentDisposition(name string, f Format, start time.Time) string {
	return mime.FormatMediaType("inline", map[string]string{"filename": Filename(name, f, start)})
}

// TrailerEnded is the HTTP trailer with which audio-api ends an open-ended
// tap (no t= end) that it stopped itself, for the reason it holds: the
// detail of the problem that would now refuse the tap (a Sink that became
// disconnected, ProblemDisconnected), in printable ASCII. The body before
// it ends cleanly and is what was recorded until then; a tap with an end
// that is stopped so is cut instead, as every tap shorter than its span
// is.
const TrailerEnded = "X-Audio-Ended"

// HeaderSafe returns s with every byte that is not printable ASCII
// replaced by '?', so that it can be a header or trailer value.
func HeaderSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}
