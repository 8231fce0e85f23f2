// SPDX-License-Identifier: Apache-2.0

// Package captureapi is the HTTP contract of the audio capture API, shared
// by the servers that answer it (the capture container of
// deploy/audio/operator.yaml and audio-api) and by the kubectl plugin that
// calls it:
//
//   - the route table and its parser (Routes, Match): discovery at
//     /v1/audio, the OpenAPI document at /v1/audio/openapi.json, an
//     endpoint's information at /v1/audio/{sinks|sources}/{name} and its
//     sound at .../{name}/audio[.wav|.flac|.opus];
//   - the query of a tap (ParseTapQuery): the temporal dimension "t" of
//     W3C Media Fragments URI 1.0 section 4.2.1 in Normal Play Time, and an Opus
//     bitrate;
//   - content negotiation by Accept (Negotiate, RFC 9110 section 12.5.1) among
//     the formats served (Formats);
//   - errors as RFC 9457 problem documents (Problem) with this API's
//     problem type URIs.
//
// The package does no I/O beyond writing a problem document to an
// http.ResponseWriter, so every parser here is safe on hostile input and
// fuzzed.
package captureapi
