// SPDX-License-Identifier: Apache-2.0

// Package objects keeps the audio operator's Sink and Source objects
// (api/audio/v1alpha1) in step with the node: it follows this node's
// objects with client-go informers, creates the object of an endpoint that
// has none, writes status only where it differs from what is stored, and
// records Events. It knows nothing of ALSA or PipeWire; the operator hands
// it whole statuses and reads specs from it.
//
// The dynamic client and the unstructured converter stand in for a
// generated clientset: two kinds do not earn a code generator's output,
// and the informers need nothing typed.
package objects
