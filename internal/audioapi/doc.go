// SPDX-License-Identifier: Apache-2.0

// Package audioapi is audio-api, the cluster's one HTTPS entry to the
// capture containers of the audio operator's pods (deploy/audio/api.yaml
// runs it as `audio-operator api`).
//
// A request is authenticated as the API server would authenticate it (a
// client certificate signed by the cluster's client CA, else a bearer
// token checked by a TokenReview), authorized by a SubjectAccessReview
// before anything is read, routed by the Sink's or Source's status.node to
// the audio operator's pod on that node, and relayed to that pod's
// capture container over TLS with audio-api's own projected token. The
// answer (status, headers, body) is streamed back unchanged.
//
// audio-api also keeps the TLS material of both ends: a CA, its own
// serving leaf, the CA's certificate for clients, and the capture
// container's leaf (certs.go).
package audioapi
