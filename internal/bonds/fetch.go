// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/bdaddr"
)

// fetchPage bounds how many Secrets one list response holds: one. A
// Secret may be up to 1 MiB on the wire, and decoded it can be several
// times that: 80,000 keys of a byte each become some 7 MiB of map entries
// and strings. A page is held about three times over while it is read
// (the response body, its decoding, the Secrets), beside the bonds kept
// so far, so four Secrets a page of such keys took 33 MiB of heap at the
// peak and one takes 19 (TestSkipsAreBounded in cmd/bluetooth-bondfetch).
// A request per Secret costs milliseconds; a radio has a few bonds.
const fetchPage = 1

// FetchMemoryLimit is the soft memory limit (runtime/debug.SetMemoryLimit)
// bondfetch sets, in bytes: below the 64 MiB of its container
// (deploy/bluetooth/operator.yaml), so that the collector reclaims what
// earlier pages left behind before the kernel would kill it.
const FetchMemoryLimit = 40 << 20

// Fetched is what Fetch found.
type Fetched struct {
	// Secrets is how many Secrets carried the adapter's label.
	Secrets int
	// Bonds are the bonds decoded from them (DecodeSecrets), sorted by
	// device.
	Bonds []Bond
	// Skipped are the Secrets and keys that were not used, each a
	// *SkipError: at most MaxSkipped of them in MaxSkippedBytes, then,
	// when there were more, one *MoreSkipped counting the rest
	// (SkippedCount adds them up).
	Skipped []error
}

// SecretLister lists the Secrets of one namespace: the one method of
// client-go's typed SecretInterface (kubernetes.Interface's
// CoreV1().Secrets(namespace)) that Fetch calls, and what NewSecretLister
// returns. Declaring it here keeps the clientset, which registers every
// API group at start, out of the programs that only restore bonds.
type SecretLister interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.SecretList, error)
}

// Fetch lists the Secrets in namespace labelled with adapter
// (AdapterLabel=adapter.Key()) through secrets, which lists that
// namespace's Secrets, page by page, and decodes their bonds as
// DecodeSecrets does, keeping only the bonds between pages and at most
// MaxFetchedBonds of them in MaxFetchedBytes, and listing at most
// MaxSkipped skips in MaxSkippedBytes. It needs list on Secrets in
// namespace and nothing else. No Secrets is not an error: an adapter that
// has paired nothing has none. A failed list is an error naming the
// namespace and selector.
func Fetch(ctx context.Context, secrets SecretLister, namespace string, adapter bdaddr.Address) (Fetched, error) {
	selector := AdapterLabel + "=" + adapter.Key()
	opts := metav1.ListOptions{LabelSelector: selector, Limit: fetchPage}
	d := newDecoder(adapter)
	var n int
	for {
		list, err := secrets.List(ctx, opts)
		if err != nil {
			return Fetched{}, fmt.Errorf("list secrets in %s with %s: %w", namespace, selector, err)
		}
		n += len(list.Items)
		for i := range list.Items {
			d.add(&list.Items[i])
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	bonds, skipped := d.result()
	return Fetched{Secrets: n, Bonds: bonds, Skipped: skipped}, nil
}
