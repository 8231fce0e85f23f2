// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/test/fixtures"
)

// The two ways a Secret writer can make bondfetch skip without end, as
// TestSkipsAreBounded plants them together.
const (
	// junkSecrets Secrets of junkKeys keys of one byte each, none of
	// them a device's: about 800 KiB a Secret.
	junkSecrets, junkKeys = 8, 80_000
	// conflictCopies Secrets of the same standing, each with different
	// bytes for the pad's bond.
	conflictCopies = 1000
)

// skipHeapBound bounds how much the heap in use grows while bondfetch
// runs through both attacks, in bytes: half the 64 MiB its container may
// use (bondfetchLimit), the other half left for the runtime, the binary
// and what the collector has not yet reclaimed.
const skipHeapBound = bondfetchLimit / 2

// skipLogBound bounds bondfetch's whole log through both attacks, in
// bytes: the skips listed (bonds.MaxSkippedBytes of text, each line
// prefixed "bondfetch: "), the one line counting the rest, and the few
// lines about the adapter and what was restored.
const skipLogBound = bonds.MaxSkippedBytes + (bonds.MaxSkipped+1)*len("bondfetch: \n") + 2<<10

// TestSkipsAreBounded runs bondfetch, through the REST client it runs
// with and as its ServiceAccount, against a real API server holding the
// mouse's bond beside 8 Secrets of 80,000 junk keys and 1,000 Secrets
// with conflicting copies of the pad: the mouse is restored, the pad is
// not, the log lists a few skips and counts every other one exactly, and
// the heap grows by much less than the container may hold. It prints
// the peak growth and the log's size.
func TestSkipsAreBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const ns = "skipbound"
	namespaceWithReader(t, ctx, ns)
	label := map[string]string{bonds.AdapterLabel: claimed.Key()}
	padInfo, mouseInfo := fixtures.BlueZ(t, "8bitdo-nes30-pro.info"), fixtures.BlueZ(t, "razer-basilisk-x-hyperspeed.info")

	create(t, ctx, bonds.EncodeSecret(ns, bonds.Bond{Adapter: claimed, Device: mouse, Info: mouseInfo}))
	// One at a time: the API server takes seconds over each of these on
	// a loaded machine, and several at once pass its request timeout.
	for i := range junkSecrets {
		data := make(map[string][]byte, junkKeys)
		for k := range junkKeys {
			data[fmt.Sprintf("x%06d", k)] = []byte{'1'}
		}
		create(t, ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bluetooth-bond-junk-%d", i), Namespace: ns, Labels: label}, Data: data})
	}
	copies := make(chan int)
	go func() {
		defer close(copies)
		for i := range conflictCopies {
			copies <- i
		}
	}()
	admin := apiServer(t).Client()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range copies {
				s := &corev1.Secret{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bluetooth-bonds-%04d", i), Namespace: ns, Labels: label},
					Data:       map[string][]byte{bonds.InfoKey(pad): append([]byte(fmt.Sprintf("# copy %d\n", i)), padInfo...)},
				}
				if _, err := admin.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
					t.Errorf("create secret %s: %v", s.Name, err)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	cfg := apiServer(t).RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":bondfetch"}
	n := newNode(t)
	w := n.world(nil)
	w.newClient = func(_, namespace string) (bonds.SecretLister, error) { return bonds.NewSecretLister(cfg, namespace) }
	root := filepath.Join(t.TempDir(), "bluetooth")

	// As main does, under the soft limit bondfetch runs with.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(bonds.FetchMemoryLimit))
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		var m runtime.MemStats
		peak := base.HeapInuse
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-stop:
				done <- peak
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	var stderr bytes.Buffer
	started := time.Now()
	code := run(ctx, n.args(root), env(map[string]string{"POD_NAMESPACE": ns}), &stderr, w)
	took := time.Since(started)
	close(stop)
	growth := <-done - base.HeapInuse
	log := stderr.String()
	t.Logf("bondfetch through %d Secrets of %d keys and %d conflicting copies: heap in use grew by %.1f MiB at its peak (bound %d MiB, the container's limit %d MiB); log of %d bytes in %d lines (bound %d bytes); %v",
		junkSecrets, junkKeys, conflictCopies, float64(growth)/(1<<20), skipHeapBound>>20, bondfetchLimit>>20, len(log), strings.Count(log, "\n"), skipLogBound, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, log)
	}

	if _, err := os.Stat(filepath.Join(root, claimed.String(), mouse.String(), "info")); err != nil {
		t.Errorf("the mouse was not restored: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, claimed.String(), pad.String())); !os.IsNotExist(err) {
		t.Errorf("a conflicting copy of the pad was restored: %v", err)
	}
	if len(log) > skipLogBound {
		t.Errorf("log of %d bytes, more than %d:\n%.4000s", len(log), skipLogBound, log)
	}
	if growth > skipHeapBound {
		t.Errorf("the heap in use grew by %d bytes, more than %d", growth, skipHeapBound)
	}
	// Every skip is listed or counted, once.
	const total = junkSecrets*junkKeys + conflictCopies
	listed := strings.Count(log, " skipped: ")
	more := regexp.MustCompile(`(?m)^bondfetch: and ([0-9]+) more keys skipped `).FindStringSubmatch(log)
	if more == nil {
		t.Fatalf("no line counts the skips not listed:\n%.4000s", log)
	}
	if n, _ := strconv.Atoi(more[1]); n != total-listed || listed == 0 || listed > bonds.MaxSkipped {
		t.Errorf("%d skips listed and %d counted, want at most %d listed and %d in all", listed, n, bonds.MaxSkipped, total)
	}
	if !strings.Contains(log, fmt.Sprintf("restored 1 bonds of %s from %d secrets", claimed, 1+junkSecrets+conflictCopies)) ||
		!strings.Contains(log, fmt.Sprintf("%d secret keys skipped", total)) {
		t.Errorf("the last line does not count every Secret and skip:\n%s", log[strings.LastIndex(log[:len(log)-1], "\n")+1:])
	}
}
