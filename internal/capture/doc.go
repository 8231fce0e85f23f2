// SPDX-License-Identifier: Apache-2.0

// Package capture is the capture container of deploy/audio/operator.yaml:
// one TLS listener that streams what a Sink plays or a Source hears, for
// audio-api alone.
//
//	/healthz   always "ok" (the container's liveness probe, over HTTPS)
//	/readyz    503 until the leaf audio-api minted is loaded, then "ok"
//	/metrics   Prometheus metrics
//	/v1/audio/{sinks|sources}/{name}[/audio[.wav|.flac|.opus]]
//	           the endpoint's node, or its sound (captureapi)
//
// A tap resolves the object's PipeWire node from the graph (pw-dump: the
// node whose liken.audio.output is the object's name), records it with
// pw-record (a sink's monitor ports, or the source) at the node's own
// rate and channel count as 16-bit PCM, and encodes it: WAV with a header
// written here, FLAC with flac(1), Opus in Ogg with opusenc(1). Only
// bearer tokens of the audio-api ServiceAccount are accepted (TokenReview
// with the audience "audio-capture"). Until the Secret volume holds a
// leaf, the listener serves a certificate it made itself.
package capture
