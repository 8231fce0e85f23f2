// SPDX-License-Identifier: Apache-2.0

// Package v1alpha1 holds the audio operator's custom resources, group
// audio.liken.sh, version v1alpha1: a Sink per playback endpoint and a
// Source per capture endpoint. Both are cluster-scoped; a Sink's or
// Source's name equals the DRA device name the operator publishes for the
// endpoint, so `kubectl get sink <device>` reads the device a claim got.
//
// The operator creates the objects and owns their status; a person owns
// the spec. Nothing deletes them: a card or speaker that goes away keeps
// its object, and the absence shows in its conditions.
//
// The CRD manifests in deploy/audio/crds are generated from these types
// by hack/gen-api.sh (controller-gen); a test fails when they are stale.
//
// +kubebuilder:object:generate=true
// +groupName=audio.liken.sh
package v1alpha1
