// SPDX-License-Identifier: Apache-2.0

package captureapi

import (
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		path, op, name string
		status         int
	}{
		{"/v1/audio", "getDiscovery", "", 0},
		{"/v1/audio/openapi.json", "getOpenAPI", "", 0},
		{"/v1/audio/sinks/kitchen-hdmi-3", "getSink", "kitchen-hdmi-3", 0},
		{"/v1/audio/sources/desk-usb-mic", "getSource", "desk-usb-mic", 0},
		{"/v1/audio/sinks/kitchen-hdmi-3/audio", "tapSink", "kitchen-hdmi-3", 0},
		{"/v1/audio/sinks/kitchen-hdmi-3/audio.wav", "tapSinkWav", "kitchen-hdmi-3", 0},
		{"/v1/audio/sources/m/audio.flac", "tapSourceFlac", "m", 0},
		{"/v1/audio/sources/m/audio.opus", "tapSourceOpus", "m", 0},
		{"/v1/audio/sinks/a%2Db/audio", "tapSink", "a-b", 0},
		{"/v1/audio/sinks/x.y.z", "getSink", "x.y.z", 0},
		{"/v1/audio/", "", "", 400},
		{"/v1/audio/sinks", "", "", 404},
		{"/v1/audio/sinks/", "", "", 400},
		{"/v1/audio/sinks/../secrets", "", "", 400},
		{"/v1/audio/sinks/a/..", "", "", 400},
		{"/v1/audio/sinks/%2E%2E/audio", "", "", 400},
		{"/v1/audio/sinks/a%2F..%2Fb/audio", "", "", 400},
		{"/v1/audio/sinks/a/..%2F..%2Fsecrets", "", "", 400},
		{"/v1/audio/sinks/A/audio", "", "", 400},
		{"/v1/audio/sinks/a%zz", "", "", 400},
		{"/v1/audio/sinks/" + strings.Repeat("a", 254), "", "", 400},
		{"/v1/audio/sinks/a/audio.mp3", "", "", 404},
		{"/v1/audio/sinks/a/audio.WAV", "", "", 404},
		{"/v1/audio/sinks/a/volume", "", "", 404},
		{"/v1/audio/sinks/a/audio/x", "", "", 404},
		{"/v1/audio/pods/a", "", "", 404},
		{"/v1/audiox", "", "", 404},
		{"/v2/audio", "", "", 404},
		{"/" + strings.Repeat("a", 2000), "", "", 400},
	} {
		m, p := ParsePath(tc.path)
		if tc.status != 0 {
			if p == nil || p.Status != tc.status {
				t.Errorf("ParsePath(%q) = %+v, %v; want status %d", tc.path, m, p, tc.status)
			} else if p.Detail == "" {
				t.Errorf("ParsePath(%q): a problem without detail", tc.path)
			}
			continue
		}
		if p != nil {
			t.Errorf("ParsePath(%q): %v", tc.path, p)
			continue
		}
		if m.Route.OperationID != tc.op || m.Name != tc.name {
			t.Errorf("ParsePath(%q) = %s %q; want %s %q", tc.path, m.Route.OperationID, m.Name, tc.op, tc.name)
		}
	}
}

// TestRoutesRoundTrip: every route's path, with a name filled in, parses
// back to that route, and operation ids are unique.
func TestRoutesRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for i := range Routes {
		r := &Routes[i]
		if seen[r.OperationID] {
			t.Errorf("operationId %q twice", r.OperationID)
		}
		seen[r.OperationID] = true
		path := strings.ReplaceAll(r.Path, "{name}", "kitchen-hdmi-3")
		m, p := ParsePath(path)
		if p != nil || m.Route != r {
			t.Errorf("%s: ParsePath(%q) = %v, %v", r.OperationID, path, m.Route, p)
		}
		if !strings.HasPrefix(strings.ReplaceAll(r.Template, "{.ext}", ""), strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(r.Path, ".wav"), ".flac"), ".opus")) {
			t.Errorf("%s: template %q does not cover path %q", r.OperationID, r.Template, r.Path)
		}
		if r.Kind == KindTap {
			if got := TapPath(r.Resource, "kitchen-hdmi-3", r.Format); got != path {
				t.Errorf("TapPath = %q, want %q", got, path)
			}
		}
	}
	if len(Routes) != 2+2*(2+len(Formats)) {
		t.Errorf("%d routes", len(Routes))
	}
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/v1/audio", "/v1/audio/openapi.json", "/v1/audio/sinks/a/audio.wav", "/v1/audio/sinks/%2e%2e/audio", "/v1/audio/sources/x%2Fy", "/v1/audio//"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		m, p := ParsePath(path)
		if p != nil {
			if m.Route != nil || p.Status < 400 || p.Detail == "" {
				t.Fatalf("ParsePath(%q): problem %+v with match %+v", path, p, m)
			}
			return
		}
		if m.Route == nil {
			t.Fatalf("ParsePath(%q): neither route nor problem", path)
		}
		if m.Route.Resource.Plural != "" {
			if m.Name == "" || strings.ContainsAny(m.Name, "/%") || m.Name == ".." {
				t.Fatalf("ParsePath(%q): name %q", path, m.Name)
			}
			// The canonical path of the match parses to the same match.
			var canon string
			if m.Route.Kind == KindInfo {
				canon = InfoPath(m.Route.Resource, m.Name)
			} else {
				canon = TapPath(m.Route.Resource, m.Name, m.Route.Format)
			}
			m2, p2 := ParsePath(canon)
			if p2 != nil || m2 != m {
				t.Fatalf("ParsePath(%q) = %+v; its canonical %q gives %+v, %v", path, m, canon, m2, p2)
			}
		}
	})
}
