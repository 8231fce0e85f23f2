// SPDX-License-Identifier: Apache-2.0

package captureapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The OpenAPI document holds exactly the route table's paths, each with
// get, head and options, and every path it names parses back to the route
// it documents.
func TestOpenAPIIsTheRouteTable(t *testing.T) {
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Servers []struct{ URL string }    `json:"servers"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI("https://audio.example.com", "v1.2.3"), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || len(doc.Servers) != 1 || doc.Servers[0].URL != "https://audio.example.com" {
		t.Errorf("openapi %q servers %+v", doc.OpenAPI, doc.Servers)
	}
	if len(doc.Paths) != len(Routes) {
		t.Errorf("%d paths documented, %d routes", len(doc.Paths), len(Routes))
	}
	ids := map[string]bool{}
	for _, rt := range Routes {
		item, ok := doc.Paths[rt.Path]
		if !ok {
			t.Errorf("route %s is not documented", rt.Path)
			continue
		}
		for _, method := range []string{"get", "head", "options"} {
			op, ok := item[method].(map[string]any)
			if !ok {
				t.Errorf("%s has no %s operation", rt.Path, method)
				continue
			}
			id, _ := op["operationId"].(string)
			if id == "" || ids[id] {
				t.Errorf("%s %s: operationId %q missing or repeated", method, rt.Path, id)
			}
			ids[id] = true
		}
		resp := item["get"].(map[string]any)["responses"].(map[string]any)
		if _, ok := resp["200"]; !ok {
			t.Errorf("%s documents no 200", rt.Path)
		}
		path := strings.ReplaceAll(rt.Path, "{name}", "kitchen-hdmi-3")
		m, p := ParsePath(path)
		if p != nil || m.Route.Path != rt.Path {
			t.Errorf("documented path %s parses to %+v, %v", path, m.Route, p)
		}
	}
	for p := range doc.Paths {
		if !slices.ContainsFunc(Routes, func(r Route) bool { return r.Path == p }) {
			t.Errorf("documented path %s is no route", p)
		}
	}
}

func TestDiscoveryNamesEveryResource(t *testing.T) {
	var doc struct {
		Resources []struct {
			Name, Self string
			Aspects    map[string]struct {
				Template   string
				MediaTypes []string
				Redirects  bool
			}
		}
		OpenAPI string
	}
	if err := json.Unmarshal(Discovery(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != OpenAPIPath || len(doc.Resources) != len(Resources) {
		t.Fatalf("discovery %+v", doc)
	}
	for i, r := range doc.Resources {
		a := r.Aspects[Aspect]
		if r.Name != Resources[i].Plural || a.Template != Root+"/"+r.Name+"/{name}/audio{.ext}{?t,bitrate}" || len(a.MediaTypes) != len(Formats) || a.Redirects {
			t.Errorf("resource %+v", r)
		}
	}
}

// A Sink's taps document the X-Audio-Ended trailer on their 200 answer,
// saying it is a trailer; no other route does.
func TestOpenAPIDescribesTheEndedTrailer(t *testing.T) {
	var doc struct {
		Paths map[string]struct {
			Get struct {
				Responses map[string]struct {
					Headers map[string]struct {
						Description string         `json:"description"`
						Schema      map[string]any `json:"schema"`
					} `json:"headers"`
				} `json:"responses"`
			} `json:"get"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI("", "v1.2.3"), &doc); err != nil {
		t.Fatal(err)
	}
	sinkTaps := 0
	for _, rt := range Routes {
		h, ok := doc.Paths[rt.Path].Get.Responses["200"].Headers[TrailerEnded]
		if rt.Kind != KindTap || rt.Resource != Sinks {
			if ok {
				t.Errorf("%s documents %s, which only a Sink's tap may end with", rt.Path, TrailerEnded)
			}
			continue
		}
		sinkTaps++
		if !ok || !strings.Contains(h.Description, "HTTP trailer") || !strings.Contains(h.Description, ProblemDisconnected.URI) || h.Schema["type"] != "string" {
			t.Errorf("%s: %s documented as %+v, want a string trailer naming %s", rt.Path, TrailerEnded, h, ProblemDisconnected.URI)
		}
	}
	if sinkTaps == 0 {
		t.Error("no Sink tap in the route table")
	}
}
