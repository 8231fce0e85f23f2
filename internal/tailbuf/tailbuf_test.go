// SPDX-License-Identifier: Apache-2.0

package tailbuf

import (
	"fmt"
	"sync"
	"testing"
)

func TestKeepsTheEnd(t *testing.T) {
	b := New(8)
	fmt.Fprint(b, "0123")
	if b.String() != "0123" || b.Len() != 4 {
		t.Fatalf("short write kept %q", b.String())
	}
	fmt.Fprint(b, "456789abc")
	if got := b.String(); got != "56789abc" {
		t.Errorf("kept %q, want the last 8 bytes 56789abc", got)
	}
	if got := string(b.Bytes()); got != "56789abc" || b.Len() != 8 {
		t.Errorf("Bytes %q, Len %d", got, b.Len())
	}
	fmt.Fprint(b, "  x \n")
	if got := b.Trimmed(); got != "abc  x" {
		t.Errorf("Trimmed %q", got)
	}
}

// TestConcurrentWrites: writers and a reader at once keep the bound.
func TestConcurrentWrites(t *testing.T) {
	b := New(64)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				fmt.Fprint(b, "line of output\n")
				_ = b.Len()
			}
		}()
	}
	wg.Wait()
	if b.Len() != 64 {
		t.Errorf("kept %d bytes, want 64", b.Len())
	}
}
