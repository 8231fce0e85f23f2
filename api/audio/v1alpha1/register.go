// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is audio.liken.sh/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: "audio.liken.sh", Version: "v1alpha1"}

// Resources as the API serves them, for dynamic clients and RBAC.
var (
	SinksResource   = GroupVersion.WithResource("sinks")
	SourcesResource = GroupVersion.WithResource("sources")
)

// AddToScheme registers Sink, SinkList, Source and SourceList with a
// scheme; it never fails for a fresh scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Sink{}, &SinkList{}, &Source{}, &SourceList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
