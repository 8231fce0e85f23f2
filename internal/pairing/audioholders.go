// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/dra"
)

// AudioDriver is the DRA driver that offers a paired Bluetooth speaker as
// a sink (deploy/audio/operator.yaml); its slice names the speaker by the
// device attribute "address" (XX:XX:XX:XX:XX:XX).
const AudioDriver = "audio.liken.sh"

// AudioHolders maps the Peripheral name (bdaddr.Address.Key) of each
// speaker that an allocated ResourceClaim of AudioDriver holds to that
// claim, so that unpair waits for it as for a claim of this driver and
// the Peripheral's status names it. A speaker is found by the "address"
// attribute of the claimed device in AudioDriver's slices (driver, pool
// and device name match the allocation result). A device held by several
// claims maps to the first in list order.
func AudioHolders(slices []resourceapi.ResourceSlice, claims []resourceapi.ResourceClaim) map[string]dra.ClaimRef {
	type devKey struct{ pool, device string }
	addrs := map[devKey]string{}
	for _, s := range slices {
		if s.Spec.Driver != AudioDriver {
			continue
		}
		for _, d := range s.Spec.Devices {
			a, ok := d.Attributes["address"]
			if !ok || a.StringValue == nil {
				continue
			}
			if addr, err := bdaddr.Parse(*a.StringValue); err == nil {
				addrs[devKey{s.Spec.Pool.Name, d.Name}] = addr.Key()
			}
		}
	}
	out := map[string]dra.ClaimRef{}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver != AudioDriver {
				continue
			}
			key, ok := addrs[devKey{r.Pool, r.Device}]
			if _, taken := out[key]; ok && !taken {
				out[key] = dra.ClaimRef{Namespace: c.Namespace, Name: c.Name}
			}
		}
	}
	return out
}

// ListAudioHolders reads AudioDriver's slices and every ResourceClaim
// and returns AudioHolders of them. Errors: the API refused a list.
func ListAudioHolders(ctx context.Context, kube kubernetes.Interface) (map[string]dra.ClaimRef, error) {
	sl, err := kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector(resourceapi.ResourceSliceSelectorDriver, AudioDriver).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("listing the %s ResourceSlices: %w", AudioDriver, err)
	}
	if len(sl.Items) == 0 {
		return nil, nil
	}
	cl, err := kube.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ResourceClaims: %w", err)
	}
	return AudioHolders(sl.Items, cl.Items), nil
}
