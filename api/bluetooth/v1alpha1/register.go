// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is bluetooth.liken.sh/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: "bluetooth.liken.sh", Version: "v1alpha1"}

// Resources as the API serves them, for dynamic clients and RBAC.
var (
	AdaptersResource        = GroupVersion.WithResource("adapters")
	PeripheralsResource     = GroupVersion.WithResource("peripherals")
	PairingRequestsResource = GroupVersion.WithResource("pairingrequests")
)

// AddToScheme registers the three kinds and their lists with a scheme; it
// never fails for a fresh scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Adapter{}, &AdapterList{}, &Peripheral{}, &PeripheralList{},
		&PairingRequest{}, &PairingRequestList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
