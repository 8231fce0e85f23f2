// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"bytes"
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bonds"
)

// Reasons of the Events the operator records on a bond Secret whose data
// was changed behind its back.
const (
	// ReasonBondSecretRepaired: the Secret no longer held the bond BlueZ
	// holds, and BlueZ's bond was written over it.
	ReasonBondSecretRepaired = "BondSecretRepaired"
	// ReasonBondSecretLeftAlone: the Secret changed, and the operator
	// cannot tell that what it holds is wrong (BlueZ holds no bond it
	// can write back for that device), or its repair failed.
	ReasonBondSecretLeftAlone = "BondSecretLeftAlone"
)

// newRecorder returns the operator's Event recorder (events.k8s.io/v1),
// for Events about bond Secrets and about the ResourceClaims that hold a
// speaker it connects; it runs until ctx ends.
func newRecorder(ctx context.Context, kube kubernetes.Interface) events.EventRecorder {
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	_ = resourceapi.AddToScheme(scheme)
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()})
	b.StartRecordingToSink(ctx.Done())
	return b.NewRecorder(scheme, "bluetooth.liken.sh/operator")
}

// bondSecretEdited records that the data of bond Secret s (as
// watchBondSecrets caches it: digests, not keys) changed, for the next
// syncBonds to compare with BlueZ's bond.
func (o *operator) bondSecretEdited(s *corev1.Secret) {
	o.mu.Lock()
	if o.edited == nil {
		o.edited = map[string]*corev1.Secret{}
	}
	o.edited[s.Name] = s
	o.mu.Unlock()
	o.bondWindow.Poke()
}

// staleSecrets returns the names of the edited Secrets of adapter that no
// longer hold what bonds.SyncOwned would write for the bond BlueZ holds
// (found): those to repair. The bond in BlueZ is the operator's own view
// and wins; a Secret can never add a bond here (only bondfetch restores
// bonds, before bluetoothd starts). An edited Secret of adapter for
// which found holds no bond, and that is not being unpaired (skip), is
// left alone and reported: nothing says its content is worse than none.
// Secrets of other adapters are not this pass's business.
func (o *operator) staleSecrets(ctx context.Context, adapter bdaddr.Address, found []bonds.Bond, skip []bdaddr.Address, edited map[string]*corev1.Secret) map[string]*corev1.Secret {
	if len(edited) == 0 {
		return nil
	}
	logger := klog.FromContext(ctx)
	prefix := bonds.SecretPrefix + adapter.Key() + "-"
	held := map[string]bonds.Bond{}
	for _, b := range found {
		held[bonds.SecretName(b.Adapter, b.Device)] = b
	}
	unpairing := map[string]bool{}
	for _, d := range skip {
		unpairing[bonds.SecretName(adapter, d)] = true
	}
	stale := map[string]*corev1.Secret{}
	for name, s := range edited {
		if !strings.HasPrefix(name, prefix) || unpairing[name] {
			continue
		}
		b, ok := held[name]
		if !ok {
			logger.Info("A bond Secret was changed and BlueZ holds no bond to compare it with: left alone", "secret", name, "adapter", adapter)
			o.event(s, corev1.EventTypeWarning, ReasonBondSecretLeftAlone, "Left alone: changed, and BlueZ on %s holds no bond for it to compare with", adapter)
			continue
		}
		for k, sum := range secretDigests(bonds.EncodeSecret(o.cfg.Namespace, b).Data) {
			if !bytes.Equal(s.Data[k], sum) {
				stale[name] = s
				break
			}
		}
	}
	return stale
}

// reportRepairs records an Event on each stale Secret: repaired when
// updated lists it, left alone (with err) otherwise.
func (o *operator) reportRepairs(ctx context.Context, adapter bdaddr.Address, stale map[string]*corev1.Secret, updated []string, err error) {
	logger := klog.FromContext(ctx)
	for name, s := range stale {
		if slices.Contains(updated, name) {
			logger.Info("A bond Secret no longer held BlueZ's bond: repaired", "secret", name, "adapter", adapter)
			o.event(s, corev1.EventTypeNormal, ReasonBondSecretRepaired, "Repaired: its data differed from the bond BlueZ on %s holds, which was written back", adapter)
			continue
		}
		logger.Info("A bond Secret no longer holds BlueZ's bond and was not repaired", "secret", name, "adapter", adapter, "err", err)
		o.event(s, corev1.EventTypeWarning, ReasonBondSecretLeftAlone, "Not repaired: its data differs from the bond BlueZ on %s holds: %v", adapter, err)
	}
}

// event records an Event regarding s (a bond Secret), unless the
// operator has no recorder (a unit test's).
func (o *operator) event(s *corev1.Secret, typ, reason, note string, args ...any) {
	if o.recorder != nil {
		o.recorder.Eventf(s, nil, typ, reason, "WriteBack", note, args...)
	}
}
