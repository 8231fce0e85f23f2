// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/bdaddr"
)

// SecretClient reads and writes the Secrets of one namespace: the methods
// of client-go's typed SecretInterface (kubernetes.Interface's
// CoreV1().Secrets(namespace)) that Sync calls. Declaring it here keeps
// the clientset out of the programs that only restore bonds (Fetch).
type SecretClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error)
	Create(ctx context.Context, secret *corev1.Secret, opts metav1.CreateOptions) (*corev1.Secret, error)
	Update(ctx context.Context, secret *corev1.Secret, opts metav1.UpdateOptions) (*corev1.Secret, error)
}

// SyncReport names the Secrets Sync created, updated and found already
// holding the bond.
type SyncReport struct {
	Created, Updated, Unchanged []string
}

// Sync writes each bond to its own Secret in namespace (EncodeSecret)
// through secrets, which reads and writes that namespace's Secrets, for
// the operator's write-back of what bluetoothd holds. Call it with what
// ReadTree returned, after the settle window: BlueZ writes parts of a new
// bond on an idle callback.
//
// For each bond it reads the Secret by name and creates it when absent,
// updates it when the info, the cache or the labels differ, and does
// nothing when they match, so an idle pass costs one GET a bond and no
// write. An update carries the resourceVersion that was read (a conflict
// is an error for this pass; the next pass retries) and keeps the
// Secret's other keys and labels. A bond without a cache leaves a stored
// cache key alone: the cache file can land after the info. Nothing is ever
// deleted. Requests are get, create and update on Secrets in namespace
// only: no list, no watch, nothing in other namespaces.
//
// A bond that fails Bond.Check or whose info holds no link key or long
// term key is never stored, so a Secret holding a key is never replaced by
// one that holds none; that bond, and a Secret of that name that is
// labelled with another adapter or not of type Opaque, are left alone
// with an error. Errors of all bonds are joined; the bonds before and
// after an error are still synced.
func Sync(ctx context.Context, secrets SecretClient, namespace string, bonds []Bond) (SyncReport, error) {
	return SyncOwned(ctx, secrets, namespace, bonds, nil)
}

// SyncOwned is Sync, with each bond's Secret owned by owners[device] when
// that is set: a created Secret carries the reference, and an existing one
// that lacks it gets it, so that deleting the owner (the bond's
// Peripheral) lets garbage collection remove the Secret. A Secret whose
// stored info holds a key is never replaced by a keyless info (a failed
// re-pair of a device BlueZ still trusts); that bond is left alone with
// an error.
func SyncOwned(ctx context.Context, secrets SecretClient, namespace string, bonds []Bond, owners map[bdaddr.Address]metav1.OwnerReference) (SyncReport, error) {
	var report SyncReport
	var errs []error
	for _, b := range bonds {
		if err := b.Check(); err != nil {
			errs = append(errs, fmt.Errorf("%w: not stored", err))
			continue
		}
		// Refused before the Secret is read, so that a stored link key
		// is never replaced by a file that holds none.
		if err := checkBonded(b.Info); err != nil {
			errs = append(errs, fmt.Errorf("bond %s of adapter %s: %w: not stored", b.Device, b.Adapter, err))
			continue
		}
		want := EncodeSecret(namespace, b)
		owner, owned := owners[b.Device]
		if owned {
			want.OwnerReferences = []metav1.OwnerReference{owner}
		}
		name := want.Name
		cur, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if _, err := secrets.Create(ctx, want, metav1.CreateOptions{}); err != nil {
				errs = append(errs, fmt.Errorf("create secret %s/%s: %w", namespace, name, err))
				continue
			}
			report.Created = append(report.Created, name)
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("get secret %s/%s: %w", namespace, name, err))
			continue
		}
		if got := cur.Labels[AdapterLabel]; got != b.Adapter.Key() {
			errs = append(errs, fmt.Errorf("secret %s/%s is labelled %s=%q, not %q: left alone", namespace, name, AdapterLabel, got, b.Adapter.Key()))
			continue
		}
		if cur.Type != corev1.SecretTypeOpaque {
			errs = append(errs, fmt.Errorf("secret %s/%s is of type %s, not Opaque: left alone", namespace, name, cur.Type))
			continue
		}
		if old := cur.Data[InfoKey(b.Device)]; keyless(b.Info) && len(old) > 0 && !keyless(old) {
			errs = append(errs, fmt.Errorf("secret %s/%s holds a key and BlueZ's info of %s holds none (a failed re-pair?): left alone", namespace, name, b.Device))
			continue
		}
		next := cur.DeepCopy()
		if owned && !slices.ContainsFunc(next.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == owner.UID }) {
			next.OwnerReferences = append(next.OwnerReferences, owner)
		}
		if next.Labels == nil {
			next.Labels = map[string]string{}
		}
		maps.Copy(next.Labels, want.Labels)
		if next.Data == nil {
			next.Data = map[string][]byte{}
		}
		maps.Copy(next.Data, want.Data)
		if maps.Equal(next.Labels, cur.Labels) && maps.EqualFunc(next.Data, cur.Data, bytes.Equal) &&
			len(next.OwnerReferences) == len(cur.OwnerReferences) {
			report.Unchanged = append(report.Unchanged, name)
			continue
		}
		if _, err := secrets.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("update secret %s/%s: %w", namespace, name, err))
			continue
		}
		report.Updated = append(report.Updated, name)
	}
	return report, errors.Join(errs...)
}
