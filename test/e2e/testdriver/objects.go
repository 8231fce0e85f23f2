// SPDX-License-Identifier: Apache-2.0

package testdriver

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DeviceClass selects every device of this driver.
func DeviceClass() *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: Class},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", Name)},
		}}},
	}
}

// ClaimForColor is a ResourceClaim for one pad of the given colour, chosen
// by a CEL selector on the "color" attribute. A non-empty params is passed
// as this driver's opaque configuration (raw JSON, not checked here).
func ClaimForColor(namespace, name, color, params string) *resourceapi.ResourceClaim {
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{
				Name: "pad",
				Exactly: &resourceapi.ExactDeviceRequest{
					DeviceClassName: Class,
					Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
						Expression: fmt.Sprintf("device.attributes[%q].color == %q", Name, color),
					}}},
				},
			}},
		}},
	}
	if params != "" {
		claim.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{
			Requests: []string{"pad"},
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
				Driver: Name, Parameters: runtime.RawExtension{Raw: []byte(params)},
			}},
		}}
	}
	return claim
}

// PodWithClaim is a Pod on node that uses claim in its one container.
func PodWithClaim(namespace, name, node, claim string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": node},
			Containers: []corev1.Container{{
				Name: "player", Image: "registry.invalid/player:1",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "pad"}}},
			}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "pad", ResourceClaimName: &claim}},
		},
	}
}
