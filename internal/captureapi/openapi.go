// SPDX-License-Identifier: Apache-2.0

package captureapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// ServiceDoc is the human documentation of the API, which every answer
// links as rel=service-doc (RFC 8631).
const ServiceDoc = "https://audio.liken.sh/docs/reference/api/"

// OpenAPI returns the OpenAPI 3.1 document of Routes, as JSON. server is
// the origin the document's servers entry names ("" names the origin the
// document was fetched from, "/"); version is the API's release, its
// info.version. Every route has get, head and options operations; the
// errors of each are problem documents (RFC 9457) of the Problem schema.
func OpenAPI(server, version string) []byte {
	if server == "" {
		server = "/"
	}
	paths := map[string]any{}
	for _, rt := range Routes {
		paths[rt.Path] = pathItem(rt)
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "liken audio capture API",
			"version":     version,
			"description": "Hear what a Sink plays or a Source hears, streamed as WAV, FLAC or Opus, authorized by Kubernetes RBAC (get on sinks/audio or sources/audio in group " + Group + ").",
		},
		"servers":      []any{map[string]any{"url": server}},
		"externalDocs": map[string]any{"url": ServiceDoc},
		"paths":        paths,
		"components": map[string]any{
			"schemas": map[string]any{"Problem": problemSchema()},
			"securitySchemes": map[string]any{
				"bearer":     map[string]any{"type": "http", "scheme": "bearer", "description": "A Kubernetes token the API server's TokenReview accepts for audience audio-api."},
				"clientCert": map[string]any{"type": "mutualTLS", "description": "A client certificate the cluster's client CA signed."},
			},
		},
		"security": []any{map[string]any{"bearer": []any{}}, map[string]any{"clientCert": []any{}}},
	}
	b, _ := json.MarshalIndent(doc, "", "  ") // maps of plain values always marshal
	return append(b, '\n')
}

func pathItem(rt Route) map[string]any {
	var params []any
	if rt.Resource.Plural != "" {
		params = append(params, map[string]any{
			"name": "name", "in": "path", "required": true,
			"description": "The " + rt.Resource.Kind + "'s name (an RFC 1123 subdomain).",
			"schema":      map[string]any{"type": "string", "maxLength": 253},
		})
	}
	for _, q := range rt.Query {
		params = append(params, map[string]any{
			"name": q.Name, "in": "query", "required": false, "description": q.Description,
			"schema": map[string]any{"type": q.Type}, "example": q.Example,
		})
	}
	responses := map[string]any{}
	for _, code := range rt.Statuses {
		resp := map[string]any{"description": statusDescription(code)}
		switch {
		case code == http.StatusOK:
			content := map[string]any{}
			for _, mt := range rt.MediaTypes {
				content[mt] = map[string]any{}
			}
			resp["content"] = content
			if endsWithTrailer(rt) {
				resp["headers"] = map[string]any{TrailerEnded: endedTrailerDoc()}
			}
		case code >= 400:
			resp["content"] = map[string]any{MediaTypeProblem: map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Problem"}}}
		}
		responses[strconv.Itoa(code)] = resp
	}
	get := map[string]any{"operationId": rt.OperationID, "summary": rt.Summary, "responses": responses}
	headResponses := map[string]any{}
	for code, resp := range responses {
		r := map[string]any{"description": resp.(map[string]any)["description"]}
		headResponses[code] = r
	}
	item := map[string]any{
		"get":     get,
		"head":    map[string]any{"operationId": "head" + upperFirst(rt.OperationID), "summary": "The headers " + lowerFirst(strings.TrimSuffix(rt.Summary, ".")) + " would have; nothing starts.", "responses": headResponses},
		"options": map[string]any{"operationId": "options" + upperFirst(rt.OperationID), "summary": "The methods of this route (Allow).", "responses": map[string]any{"204": map[string]any{"description": "Allow: " + Allow}}},
	}
	if len(params) > 0 {
		item["parameters"] = params
	}
	return item
}

// endsWithTrailer reports whether audio-api may end rt's answer with
// TrailerEnded: a tap of a Sink, which it stops when the Sink becomes
// disconnected.
func endsWithTrailer(rt Route) bool { return rt.Kind == KindTap && rt.Resource == Sinks }

// endedTrailerDoc documents TrailerEnded. OpenAPI 3.1 has no object for
// trailers, so it is a header of the 200 answer whose description says
// where it comes.
func endedTrailerDoc() map[string]any {
	return map[string]any{
		"description": "An HTTP trailer (RFC 9110 section 6.5), sent after the body and not announced in a Trailer header: " +
			"audio-api stopped an open-ended tap (no t end) itself, and this is why, the detail of the problem that would now refuse the tap " +
			"(a Sink that became disconnected, " + ProblemDisconnected.URI + "), in printable ASCII. " +
			"The body before it ends cleanly and holds what was recorded until then. " +
			"A tap with an end that is stopped so gets no trailer: its body is cut, and ends in an error.",
		"schema": map[string]any{"type": "string"},
	}
}

func problemSchema() map[string]any {
	str := map[string]any{"type": "string"}
	return map[string]any{
		"type":     "object",
		"required": []any{"type", "title", "status"},
		"properties": map[string]any{
			"type": map[string]any{"type": "string", "format": "uri"}, "title": str,
			"status": map[string]any{"type": "integer"}, "detail": str, "instance": str,
			"acceptable": map[string]any{"type": "array", "items": map[string]any{
				"type": "object", "properties": map[string]any{"type": str, "href": str},
			}},
		},
	}
}

func statusDescription(code int) string {
	switch code {
	case http.StatusOK:
		return "OK"
	case http.StatusNotModified:
		return "The document has not changed (If-None-Match)."
	case http.StatusConflict:
		return "The object is on no node (" + ProblemAway.URI + "), or a tapped Sink is disconnected (" + ProblemDisconnected.URI + ")."
	}
	return http.StatusText(code)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// Discovery returns the discovery document at Root, as JSON: each
// resource's self link and the template of its audio aspect with the
// media types and extensions served, and where the OpenAPI document is.
// Taps never redirect.
func Discovery() []byte {
	var resources []any
	for _, res := range Resources {
		var types, exts []string
		for _, f := range Formats {
			types = append(types, f.MediaType)
			exts = append(exts, f.Name)
		}
		resources = append(resources, map[string]any{
			"name": res.Plural, "kind": res.Kind, "group": Group,
			"self": Root + "/" + res.Plural + "/{name}",
			"aspects": map[string]any{Aspect: map[string]any{
				"template":   Root + "/" + res.Plural + "/{name}/" + Aspect + "{.ext}" + QueryTemplate,
				"mediaTypes": types, "extensions": exts, "redirects": false,
				"permission": map[string]any{"verb": "get", "group": Group, "resource": res.Subresource},
			}},
		})
	}
	b, _ := json.MarshalIndent(map[string]any{"resources": resources, "openapi": OpenAPIPath}, "", "  ")
	return append(b, '\n')
}
