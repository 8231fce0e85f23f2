// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// junkSecret is a Secret of adapter's holding keys tiny keys, none a
// device: about 800 KiB with 80,000 keys, under the API server's 1 MiB.
func junkSecret(name string, keys int) corev1.Secret {
	data := make(map[string][]byte, keys)
	for i := range keys {
		data[fmt.Sprintf("x%06d", i)] = []byte{'1'}
	}
	return corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{AdapterLabel: adapter.Key()}}, Data: data}
}

// conflictingCopies are n Secrets of the same standing, each holding the
// pad's bond with bytes of its own.
func conflictingCopies(t testing.TB, n int) []corev1.Secret {
	info := recordedBonds(t)[0].Info
	out := make([]corev1.Secret, n)
	for i := range out {
		out[i] = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bluetooth-bonds-%04d", i), Namespace: "ns", Labels: map[string]string{AdapterLabel: adapter.Key()}},
			Data:       map[string][]byte{InfoKey(pad): append([]byte(fmt.Sprintf("# copy %d\n", i)), info...)},
		}
	}
	return out
}

// checkBounded fails unless skipped lists at most MaxSkipped *SkipErrors
// in MaxSkippedBytes and then, exactly when the list was cut, one
// *MoreSkipped, together standing for want skips. It returns the listed
// skips and the bytes of their text.
func checkBounded(t *testing.T, skipped []error, want int) ([]*SkipError, int) {
	t.Helper()
	var listed []*SkipError
	size := 0
	for i, err := range skipped {
		var se *SkipError
		var more *MoreSkipped
		switch {
		case errors.As(err, &se):
			listed = append(listed, se)
			size += len(err.Error())
		case errors.As(err, &more) && i == len(skipped)-1:
			if want := want - len(listed); more.Count != want {
				t.Errorf("and %d more, want %d", more.Count, want)
			}
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("and %d more keys skipped", want-len(listed))) {
				t.Errorf("summary %q", err)
			}
		default:
			t.Errorf("skip %d of %d: %T %v", i, len(skipped), err, err)
		}
	}
	if len(listed) > MaxSkipped || size > MaxSkippedBytes {
		t.Errorf("%d skips in %d bytes listed, want at most %d in %d", len(listed), size, MaxSkipped, MaxSkippedBytes)
	}
	if (len(listed) < want) != (len(skipped) == len(listed)+1) {
		t.Errorf("%d listed of %d, %d entries: the summary is missing or extra", len(listed), want, len(skipped))
	}
	if got := SkippedCount(skipped); got != want {
		t.Errorf("SkippedCount %d, want %d", got, want)
	}
	return listed, size
}

// Eight Secrets of 80,000 tiny keys each, beside a real bond: the bond is
// restored, the first skips are listed in order and the other 639,900 are
// one count.
func TestDecodeSecretsListsAFewOfManySkippedKeys(t *testing.T) {
	const secrets, keys = 8, 80_000
	var list []corev1.Secret
	for i := range secrets {
		list = append(list, junkSecret(fmt.Sprintf("junk-%d", i), keys))
	}
	list = append(list, *EncodeSecret("ns", recordedBonds(t)[0]))
	bonds, skipped := DecodeSecrets(adapter, list)
	if len(bonds) != 1 || bonds[0].Device != pad {
		t.Fatalf("bonds %+v", bonds)
	}
	listed, size := checkBounded(t, skipped, secrets*keys)
	if len(listed) == 0 || listed[0].Secret != "ns/junk-0" || listed[0].Key != "x000000" || listed[len(listed)-1].Key != fmt.Sprintf("x%06d", len(listed)-1) {
		t.Errorf("listed from %+v to %+v, want the first keys of junk-0 in order", listed[0], listed[len(listed)-1])
	}
	t.Logf("%d skips: %d listed in %d bytes, then %q", SkippedCount(skipped), len(listed), size, skipped[len(skipped)-1])

	// One Secret alone is bounded the same way, and past the bound a
	// key leaves nothing behind: what the decode's result holds, once
	// the collector has run, is a few KiB however many keys were skipped.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, skipped = DecodeSecret(adapter, &list[0])
	runtime.GC()
	runtime.ReadMemStats(&after)
	checkBounded(t, skipped, keys)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("one Secret of %d keys: %d bytes held by the result (bound %d), %d allocated while decoding",
		keys, held, decodeHeldBound, after.TotalAlloc-before.TotalAlloc)
	if held > decodeHeldBound {
		t.Errorf("the skips of one Secret of %d keys hold %d bytes, more than %d", keys, held, decodeHeldBound)
	}
	runtime.KeepAlive(skipped)
	runtime.KeepAlive(list)
}

// decodeHeldBound bounds what the result of decoding a Secret of 80,000
// tiny keys holds, in bytes: MaxSkipped skips in MaxSkippedBytes, with
// room to spare. A skip kept for every key would be some 200 bytes each,
// 16 MB in all.
const decodeHeldBound = 1 << 20

// A thousand Secrets of the same standing, each with different bytes for
// the pad: none is restored, every copy is one skip, and the reason of
// each names at most MaxConflictNames others and counts the rest.
func TestDecodeSecretsConflictOfAThousandCopies(t *testing.T) {
	const copies = 1000
	bonds, skipped := DecodeSecrets(adapter, conflictingCopies(t, copies))
	if len(bonds) != 0 {
		t.Fatalf("a conflicting device was restored: %+v", bonds)
	}
	listed, size := checkBounded(t, skipped, copies)
	if len(listed) < 3 {
		t.Fatalf("%d listed", len(listed))
	}
	// The first two make the conflict; each later one is told of the
	// copies before it.
	for i, se := range listed {
		if se.Secret != fmt.Sprintf("ns/bluetooth-bonds-%04d", i) {
			t.Errorf("skip %d is of %s", i, se.Secret)
		}
		if i < 2 {
			if !strings.Contains(se.Reason, "bluetooth-bonds-0000 and bluetooth-bonds-0001 of the same standing: neither is restored") {
				t.Errorf("skip %d: %s", i, se.Reason)
			}
			continue
		}
		names := make([]string, min(i, MaxConflictNames))
		for j := range names {
			names[j] = fmt.Sprintf("bluetooth-bonds-%04d", j)
		}
		want := "this secret and secrets " + strings.Join(names, ", ")
		if i > MaxConflictNames {
			want += fmt.Sprintf(" and %d more", i-MaxConflictNames)
		}
		if !strings.Contains(se.Reason, want+" of the same standing: none of them is restored") {
			t.Errorf("skip %d: %s\nwant %q", i, se.Reason, want)
		}
	}
	last := listed[len(listed)-1]
	t.Logf("%d skips: %d listed in %d bytes, the last %d bytes: %s", SkippedCount(skipped), len(listed), size, len(last.Error()), last)
}
