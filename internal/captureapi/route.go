// SPDX-License-Identifier: Apache-2.0

package captureapi

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Root is the path of the discovery document; every route is under it
// (/v1/{domain} with domain "audio").
const Root = "/v1/audio"

// OpenAPIPath is the path of the OpenAPI document.
const OpenAPIPath = Root + "/openapi.json"

// Aspect is the path segment of an endpoint's sound: .../{name}/audio,
// optionally with a format's extension.
const Aspect = "audio"

// Group is the API group of the Sink and Source objects the routes name.
const Group = "audio.liken.sh"

// Allow is the Allow header of every route: the methods each one answers
// (RFC 9110 section 10.2.1). Any other method is 405 with this header.
const Allow = "GET, HEAD, OPTIONS"

// Resource is one kind of object a route names by its name.
type Resource struct {
	// Plural is the path segment and the resource of the
	// audio.liken.sh group ("sinks").
	Plural string
	// Kind is the object's kind ("Sink").
	Kind string
	// Subresource is the resource/subresource pair whose "get" a caller
	// needs to tap ("sinks/audio"); the information route needs "get" on
	// Plural alone.
	Subresource string
}

// The resources the routes name.
var (
	Sinks   = Resource{Plural: "sinks", Kind: "Sink", Subresource: "sinks/" + Aspect}
	Sources = Resource{Plural: "sources", Kind: "Source", Subresource: "sources/" + Aspect}
)

// Resources are Sinks and Sources, in that order.
var Resources = []Resource{Sinks, Sources}

// Kind says what a route serves.
type Kind int

// The kinds of route.
const (
	// KindDiscovery is the discovery document at Root.
	KindDiscovery Kind = iota + 1
	// KindOpenAPI is the OpenAPI document at OpenAPIPath.
	KindOpenAPI
	// KindInfo is one Sink's or Source's information.
	KindInfo
	// KindTap is one Sink's or Source's sound, streamed.
	KindTap
)

// String returns the kind's name as metrics and logs use it: "discovery",
// "openapi", "info" or "tap".
func (k Kind) String() string {
	switch k {
	case KindDiscovery:
		return "discovery"
	case KindOpenAPI:
		return "openapi"
	case KindInfo:
		return "info"
	case KindTap:
		return "tap"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Param is one query parameter a route takes.
type Param struct {
	// Name is the parameter's name.
	Name string
	// Description says what it means, its syntax and bounds.
	Description string
	// Type is its JSON Schema type in an OpenAPI document ("string",
	// "integer").
	Type string
	// Example is a value, as it appears in a query.
	Example string
	// OpusOnly reports that only the Opus format takes it.
	OpusOnly bool
}

// The query parameters of a tap.
var (
	ParamTime = Param{
		Name: "t", Type: "string", Example: "2,4",
		Description: "The span to capture, as the temporal dimension of W3C Media Fragments URI 1.0 in Normal Play Time: " +
			"begin,end; begin; or ,end, in seconds (12.5), mm:ss or h:mm:ss, optionally after \"npt:\". " +
			"Zero is the moment the capture container accepts the request; the span is half-open and begin is at most 60 s. " +
			"Without end the tap streams until the client leaves.",
	}
	ParamBitrate = Param{
		Name: "bitrate", Type: "integer", Example: "96", OpusOnly: true,
		Description: "The Opus encoder's target bitrate in kbit/s, from 6 to 256 per channel; without it the encoder chooses.",
	}
)

// Route is one entry of the route table: one path (as OpenAPI 3.1 writes
// paths) and what it serves. Every route answers GET, HEAD and OPTIONS.
type Route struct {
	// Kind says what it serves.
	Kind Kind
	// Path is the route's path with OpenAPI path templating:
	// "/v1/audio/sinks/{name}/audio.wav".
	Path string
	// Template is the RFC 6570 URI template (level 3) of the routes that
	// serve the same thing, without the query: the negotiated and the
	// fixed taps of a Sink share "/v1/audio/sinks/{name}/audio{.ext}".
	// Metrics label requests by it.
	Template string
	// Resource is the kind of object the route names; zero for the
	// discovery and OpenAPI documents.
	Resource Resource
	// Format is the fixed format of a tap route with an extension; nil
	// for a tap negotiated by Accept and for the other kinds.
	Format *Format
	// OperationID is the route's unique operationId in OpenAPI.
	OperationID string
	// Summary is a one-line description.
	Summary string
	// MediaTypes are the Content-Types of its successful answers.
	MediaTypes []string
	// Query are the query parameters it takes; any other is a 400.
	Query []Param
	// Statuses are the status codes it may answer with, ascending.
	Statuses []int
}

// QueryTemplate is the RFC 6570 template of the tap routes' query,
// appended to a Template in the discovery document.
const QueryTemplate = "{?t,bitrate}"

// Routes is the route table every server and the OpenAPI document are
// built from, in a fixed order: discovery, OpenAPI, then for each
// resource its information, its negotiated tap and its fixed taps in
// Formats order.
var Routes = buildRoutes()

func buildRoutes() []Route {
	docStatuses := []int{200, 304, 401, 405, 406, 429}
	rs := []Route{
		{Kind: KindDiscovery, Path: Root, Template: Root, OperationID: "getDiscovery",
			Summary: "The resources served and the templates of their routes.", MediaTypes: []string{MediaTypeJSON}, Statuses: docStatuses},
		{Kind: KindOpenAPI, Path: OpenAPIPath, Template: OpenAPIPath, OperationID: "getOpenAPI",
			Summary: "This API's OpenAPI 3.1 document.", MediaTypes: []string{MediaTypeOpenAPI}, Statuses: docStatuses},
	}
	tapStatuses := []int{200, 400, 401, 403, 404, 405, 406, 409, 429, 500, 502, 503, 504}
	for _, res := range Resources {
		base := Root + "/" + res.Plural + "/{name}"
		tapTemplate := base + "/" + Aspect + "{.ext}"
		rs = append(rs, Route{Kind: KindInfo, Path: base, Template: base, Resource: res,
			OperationID: "get" + res.Kind, Summary: "Where the " + res.Kind + " is and the format a tap of it has.",
			MediaTypes: []string{MediaTypeJSON}, Statuses: []int{200, 400, 401, 403, 404, 405, 409, 429, 502, 503, 504}})
		var all []string
		for _, f := range Formats {
			all = append(all, f.MediaType)
		}
		rs = append(rs, Route{Kind: KindTap, Path: base + "/" + Aspect, Template: tapTemplate, Resource: res,
			OperationID: "tap" + res.Kind, Summary: "What the " + res.Kind + " " + hears(res) + ", streamed in the format Accept prefers (WAV, then FLAC, then Opus).",
			MediaTypes: all, Query: []Param{ParamTime, ParamBitrate}, Statuses: tapStatuses})
		for i := range Formats {
			f := &Formats[i]
			q := []Param{ParamTime}
			if f.Bitrate {
				q = append(q, ParamBitrate)
			}
			rs = append(rs, Route{Kind: KindTap, Path: base + "/" + Aspect + "." + f.Name, Template: tapTemplate, Resource: res, Format: f,
				OperationID: "tap" + res.Kind + strings.ToUpper(f.Name[:1]) + f.Name[1:], Summary: "What the " + res.Kind + " " + hears(res) + ", streamed as " + f.MediaType + ".",
				MediaTypes: []string{f.MediaType}, Query: q, Statuses: tapStatuses})
		}
	}
	return rs
}

func hears(r Resource) string {
	if r == Sources {
		return "hears"
	}
	return "plays"
}

// Match is a request path resolved against Routes.
type Match struct {
	// Route is the matched entry of Routes.
	Route *Route
	// Name is the object's name (decoded); empty for the documents.
	Name string
}

// Format returns the tap's fixed format and true, or false for a route
// with none (a negotiated tap, the other kinds).
func (m Match) Format() (Format, bool) {
	if m.Route == nil || m.Route.Format == nil {
		return Format{}, false
	}
	return *m.Route.Format, true
}

// TapPath returns the path of the negotiated tap of m's object
// ("/v1/audio/sinks/kitchen/audio"), to which a format's extension is
// appended for its fixed route; empty for the documents.
func (m Match) TapPath() string {
	if m.Name == "" {
		return ""
	}
	return TapPath(m.Route.Resource, m.Name, nil)
}

// TapPath returns the path of the tap of the object name of resource r:
// the negotiated route with f nil, else f's fixed route. name is escaped
// as a path segment.
func TapPath(r Resource, name string, f *Format) string {
	p := Root + "/" + r.Plural + "/" + url.PathEscape(name) + "/" + Aspect
	if f != nil {
		p += "." + f.Name
	}
	return p
}

// InfoPath returns the path of the information route of the object name
// of resource r.
func InfoPath(r Resource, name string) string {
	return Root + "/" + r.Plural + "/" + url.PathEscape(name)
}

// maxPathLen bounds the escaped path Parse reads: the longest route is
// Root, a plural, a 253-character name escaped at most threefold and the
// longest aspect.
const maxPathLen = 1024

// ParsePath resolves escapedPath (a request's URL.EscapedPath(), or
// RawPath) against Routes. Each segment is percent-decoded after the path
// is split on "/". Errors are problem documents: 400 ProblemBadRequest
// for a segment that is not valid percent-encoding, one that decodes to
// something holding "/", an empty segment, "." or "..", or a name that
// is not a Kubernetes object name (an RFC 1123 subdomain); 404
// ProblemNotFound for a path that is no route.
func ParsePath(escapedPath string) (Match, *Problem) {
	if len(escapedPath) > maxPathLen {
		return Match{}, NewProblem(ProblemBadRequest, "The path is %d bytes long; no route is longer than %d.", len(escapedPath), maxPathLen)
	}
	rest, ok := strings.CutPrefix(escapedPath, Root)
	if !ok || (rest != "" && rest[0] != '/') {
		return Match{}, notFound(escapedPath)
	}
	if rest == "" {
		return Match{Route: routeOf(KindDiscovery, Resource{}, nil)}, nil
	}
	raw := strings.Split(rest[1:], "/")
	segs := make([]string, len(raw))
	for i, r := range raw {
		s, err := url.PathUnescape(r)
		if err != nil {
			return Match{}, NewProblem(ProblemBadRequest, "Path segment %q is not valid percent-encoding.", r)
		}
		if strings.Contains(s, "/") {
			return Match{}, NewProblem(ProblemBadRequest, "Path segment %q decodes to %q, which holds a slash; no route's segment does.", r, s)
		}
		switch s {
		case "":
			return Match{}, NewProblem(ProblemBadRequest, "The path %q has an empty segment; routes are %s.", escapedPath, grammar)
		case ".", "..":
			return Match{}, NewProblem(ProblemBadRequest, "The path %q has a %q segment, which no route has; routes are %s.", escapedPath, s, grammar)
		}
		segs[i] = s
	}
	if len(segs) == 1 && raw[0] == "openapi.json" {
		return Match{Route: routeOf(KindOpenAPI, Resource{}, nil)}, nil
	}
	var res Resource
	for _, r := range Resources {
		if segs[0] == r.Plural {
			res = r
		}
	}
	if res.Plural == "" || len(segs) < 2 || len(segs) > 3 {
		return Match{}, notFound(escapedPath)
	}
	name := segs[1]
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return Match{}, NewProblem(ProblemBadRequest, "%q is not a %s name: %s.", name, res.Kind, strings.Join(errs, "; "))
	}
	if len(segs) == 2 {
		return Match{Route: routeOf(KindInfo, res, nil), Name: name}, nil
	}
	aspect, ext, hasExt := strings.Cut(segs[2], ".")
	if aspect != Aspect {
		return Match{}, notFound(escapedPath)
	}
	if !hasExt {
		return Match{Route: routeOf(KindTap, res, nil), Name: name}, nil
	}
	f, ok := FormatByName(ext)
	if !ok || f.Name != ext {
		return Match{}, NewProblem(ProblemNotFound, "No format has the extension %q; the extensions are %s.", ext, strings.Join(FormatNames(), ", "))
	}
	return Match{Route: routeOf(KindTap, res, &f), Name: name}, nil
}

// grammar is the route grammar as problem details quote it.
var grammar = Root + ", " + OpenAPIPath + " and " + Root + "/{sinks|sources}/{name}[/" + Aspect + "[." + strings.Join(FormatNames(), "|.") + "]]"

func notFound(path string) *Problem {
	return NewProblem(ProblemNotFound, "No route has the path %q; routes are %s.", path, grammar)
}

// routeOf returns the entry of Routes with kind k, resource r and fixed
// format f (nil: none).
func routeOf(k Kind, r Resource, f *Format) *Route {
	for i := range Routes {
		rt := &Routes[i]
		if rt.Kind != k || rt.Resource != r {
			continue
		}
		if (rt.Format == nil) != (f == nil) || (f != nil && rt.Format.Name != f.Name) {
			continue
		}
		return rt
	}
	panic(fmt.Sprintf("captureapi: no route of kind %v for %q", k, r.Plural))
}
