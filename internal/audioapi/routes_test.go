// SPDX-License-Identifier: Apache-2.0

package audioapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/captureapi"
)

// Every path the OpenAPI document names is a route of the server (an
// unauthenticated GET is refused with 401, not 404), answers OPTIONS with
// its methods and any other method with 405; a path the document does not
// name is a 404. Nothing here reaches an API server: the checks before
// authentication refuse first.
func TestServerRoutesAreTheOpenAPIPaths(t *testing.T) {
	s := &server{authn: &Authenticator{}, metrics: newMetrics(nil)}
	var doc struct {
		Paths map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(captureapi.OpenAPI("", "test"), &doc); err != nil {
		t.Fatal(err)
	}
	answer := func(method, path string) (*httptest.ResponseRecorder, map[string]any) {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		var body map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		return w, body
	}
	for p := range doc.Paths {
		path := strings.ReplaceAll(p, "{name}", "kitchen-hdmi-3")
		w, body := answer(http.MethodGet, path)
		if w.Code != http.StatusUnauthorized || body["type"] != captureapi.ProblemUnauthenticated.URI ||
			w.Header().Get("WWW-Authenticate") != `Bearer realm="audio-api"` {
			t.Errorf("GET %s without a credential: %d %v %q", path, w.Code, body, w.Header().Get("WWW-Authenticate"))
		}
		if inst, _ := body["instance"].(string); !strings.HasPrefix(inst, path+"#") {
			t.Errorf("GET %s: instance %q", path, inst)
		}
		if w, _ := answer(http.MethodOptions, path); w.Code != http.StatusNoContent || w.Header().Get("Allow") != captureapi.Allow {
			t.Errorf("OPTIONS %s: %d Allow %q", path, w.Code, w.Header().Get("Allow"))
		}
		if w, body := answer(http.MethodDelete, path); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != captureapi.Allow ||
			body["type"] != captureapi.ProblemMethodNotAllowed.URI {
			t.Errorf("DELETE %s: %d %v", path, w.Code, body)
		}
	}
	for _, path := range []string{"/v1/audio/speakers/x", "/v1/audio/sinks/x/volume", "/v2/audio", "/v1/audio/sinks/x/audio.mp3"} {
		if w, body := answer(http.MethodGet, path); w.Code != http.StatusNotFound || body["type"] != captureapi.ProblemNotFound.URI {
			t.Errorf("GET %s: %d %v", path, w.Code, body)
		}
	}
	// A name with /.. is refused as a bad path, not followed.
	for _, path := range []string{"/v1/audio/sinks/..%2F..%2Fsecrets/audio", "/v1/audio/sinks/x/../../secrets", "/v1/audio/sinks/x%2F../audio"} {
		if w, body := answer(http.MethodGet, path); w.Code != http.StatusBadRequest || body["type"] != captureapi.ProblemBadRequest.URI || body["detail"] == "" {
			t.Errorf("GET %s: %d %v", path, w.Code, body)
		}
	}
}

func TestImpossibleAuthorizationHeader(t *testing.T) {
	s := &server{authn: &Authenticator{}, metrics: newMetrics(nil)}
	r := httptest.NewRequest(http.MethodGet, captureapi.Root, nil)
	r.Header.Set("Authorization", "Basic YWxpY2U6c2VjcmV0")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "not a bearer token") ||
		!strings.Contains(w.Header().Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("Basic credentials: %d %s %q", w.Code, w.Body, w.Header().Get("WWW-Authenticate"))
	}
}
