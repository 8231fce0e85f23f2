// SPDX-License-Identifier: Apache-2.0

package captureapi

import (
	"errors"
	"testing"
)

// FuzzParseProblem: the body comes from whatever answered a relay or the
// CLI. Anything is either refused as not a problem document or read with
// its status agreeing with the one it was answered with.
func FuzzParseProblem(f *testing.F) {
	f.Add(503, MediaTypeProblem, []byte(`{"type":"https://liken.sh/problems/capture-busy","title":"Busy","status":503,"detail":"4 taps"}`))
	f.Add(404, MediaTypeProblem+"; charset=utf-8", []byte(`{"title":"x"}`))
	f.Add(400, "application/json", []byte(`{}`))
	f.Add(500, MediaTypeProblem, []byte(`[1,2]`))
	f.Add(409, MediaTypeProblem, []byte(`{"status":"409"}`))
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		p, err := ParseProblem(status, contentType, body)
		if err != nil {
			if p != nil {
				t.Fatalf("an error (%v) with a problem", err)
			}
			if !errors.Is(err, ErrNotProblem) {
				t.Fatalf("error %v does not wrap ErrNotProblem", err)
			}
			return
		}
		if p.Status != status {
			t.Fatalf("answered %d, read status %d", status, p.Status)
		}
		if p.Type == "" {
			t.Fatal("a problem without a type (want about:blank)")
		}
	})
}
