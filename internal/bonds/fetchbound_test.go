// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/test/e2e/harness"
)

// withDevice returns b for device n (AA:BB:CC:00:hi:lo) with its cache
// padded by pad bytes of valid key-file lines.
func withDevice(b Bond, n int, pad int) Bond {
	b.Device = bdaddr.MustParse(fmt.Sprintf("AA:BB:CC:00:%02X:%02X", n>>8, n&0xff))
	if pad > 0 {
		var c bytes.Buffer
		c.WriteString("[ServiceRecords]\n")
		for i := 0; c.Len() < pad; i++ {
			fmt.Fprintf(&c, "0x%08x=%s\n", i, strings.Repeat("35", 60))
		}
		b.Cache = c.Bytes()
	}
	return b
}

func reasons(skipped []error, want string) int {
	n := 0
	for _, s := range skipped {
		if strings.Contains(s.Error(), want) {
			n++
		}
	}
	return n
}

// Two Secrets of the same standing that disagree about a device restore
// neither copy and name both; identical copies are one bond; this
// package's own Secret settles it.
func TestDecodeSecretsConflict(t *testing.T) {
	b := recordedBonds(t)[0]
	other := bytes.Replace(b.Info, []byte("Trusted=true"), []byte("Trusted=false"), 1)
	legacy := func(name string, info []byte) corev1.Secret {
		return corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{AdapterLabel: adapter.Key()}},
			Data: map[string][]byte{pad.Key(): info}}
	}
	real, planted := legacy("bluetooth-bonds-a", b.Info), legacy("bluetooth-bonds-z", other)
	bonds, skipped := DecodeSecrets(adapter, []corev1.Secret{real, planted})
	if len(bonds) != 0 {
		t.Fatalf("a conflicting device was restored: %+v", bonds)
	}
	if n := reasons(skipped, "bluetooth-bonds-a and bluetooth-bonds-z of the same standing: neither is restored"); n != 2 {
		t.Errorf("want both copies named in the skip reasons, got %v", skipped)
	}
	bonds, skipped = DecodeSecrets(adapter, []corev1.Secret{real, legacy("bluetooth-bonds-z", b.Info)})
	if len(bonds) != 1 || !bytes.Equal(bonds[0].Info, b.Info) || reasons(skipped, "with the same bytes") != 1 {
		t.Errorf("identical copies: %+v, %v", bonds, skipped)
	}
	ours := *EncodeSecret("ns", b)
	for _, order := range [][]corev1.Secret{{real, planted, ours}, {ours, planted, real}} {
		bonds, _ = DecodeSecrets(adapter, order)
		if len(bonds) != 1 || !bytes.Equal(bonds[0].Info, b.Info) {
			t.Errorf("with this package's Secret: %+v", bonds)
		}
	}
}

// An info without a key is refused on restore, as Sync refuses to store
// one.
func TestDecodeSecretRefusesAnInfoWithoutKeys(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", Labels: map[string]string{AdapterLabel: adapter.Key()}},
		Data: map[string][]byte{InfoKey(pad): []byte("[General]\nName=8Bitdo NES30 Pro\nClass=0x002508\nTrusted=true\n")}}
	bonds, skipped := DecodeSecret(adapter, s)
	if len(bonds) != 0 || reasons(skipped, "not a bond") != 1 {
		t.Fatalf("%+v %v", bonds, skipped)
	}
}

// Past MaxFetchedBonds bonds or MaxFetchedBytes bytes, the bonds held are
// kept and the rest are skipped naming the bound.
func TestDecodeSecretsBound(t *testing.T) {
	b := recordedBonds(t)[1]
	var secrets []corev1.Secret
	for n := range MaxFetchedBonds + 10 {
		secrets = append(secrets, *EncodeSecret("ns", withDevice(b, n, 0)))
	}
	bonds, skipped := DecodeSecrets(adapter, secrets)
	if len(bonds) != MaxFetchedBonds || reasons(skipped, "past the bound") != 10 {
		t.Errorf("%d bonds, %d past the bound, want %d and 10", len(bonds), reasons(skipped, "past the bound"), MaxFetchedBonds)
	}
	secrets = secrets[:0]
	for n := range 24 {
		secrets = append(secrets, *EncodeSecret("ns", withDevice(b, n, MaxCacheSize-4096)))
	}
	bonds, skipped = DecodeSecrets(adapter, secrets)
	held := 0
	for _, x := range bonds {
		held += len(x.Info) + len(x.Cache)
	}
	if held > MaxFetchedBytes || len(bonds) < MaxFetchedBytes/(1<<20)-1 || len(bonds)+reasons(skipped, "past the bound") != 24 {
		t.Errorf("%d bonds of %d bytes held, %d past the bound", len(bonds), held, reasons(skipped, "past the bound"))
	}
}

// BenchmarkFetchHeap: 100 Secrets of about 1 MiB each, each a bond of its
// own device, on a real API server, fetched as bondfetch does. The peak
// memory the process holds from the OS (the runtime's, the client's and
// the test's own included) is printed beside the 64 MiB bondfetch runs
// in.
func BenchmarkFetchHeap(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cluster, err := harness.Start(ctx, harness.Options{Logf: b.Logf, WithoutScheduler: true, WithoutControllerManager: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cluster.Stop)
	admin := cluster.Client()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	bond := recordedBonds(b)[1]
	for n := range 100 {
		if _, err := admin.CoreV1().Secrets(namespace).Create(ctx, EncodeSecret(namespace, withDevice(bond, n, MaxCacheSize-4096)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(FetchMemoryLimit))
	b.ResetTimer()
	var peak, peakHeap uint64
	for range b.N {
		runtime.GC()
		stop := make(chan struct{})
		done := make(chan uint64)
		go func() {
			var m runtime.MemStats
			var max, heap uint64
			for {
				runtime.ReadMemStats(&m)
				max = maxU(max, m.Sys-m.HeapReleased)
				heap = maxU(heap, m.HeapAlloc)
				select {
				case <-stop:
					done <- max
					done <- heap
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		f, err := Fetch(ctx, admin.CoreV1().Secrets(namespace), namespace, adapter)
		close(stop)
		peak = maxU(peak, <-done)
		peakHeap = maxU(peakHeap, <-done)
		if err != nil || f.Secrets != 100 || len(f.Bonds) == 0 || len(f.Bonds) == 100 {
			b.Fatalf("fetch: %d secrets, %d bonds, %v", f.Secrets, len(f.Bonds), err)
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
	b.Logf("peak %.1f MiB held from the OS (heap %.1f MiB) fetching 100 Secrets of ~1 MiB with bondfetch's soft limit of %d MiB (target: under the 64 MiB bondfetch runs in)",
		float64(peak)/(1<<20), float64(peakHeap)/(1<<20), FetchMemoryLimit>>20)
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}
