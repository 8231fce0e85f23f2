// SPDX-License-Identifier: Apache-2.0

// Package tailbuf keeps the end of a stream: the last bytes a child
// process wrote to its standard error, quoted in the error that reports
// the child's failure. A child that writes without end costs a bounded
// amount of memory.
package tailbuf

import (
	"strings"
	"sync"
)

// Buffer is an io.Writer that keeps the last Max bytes written to it. It
// is safe for concurrent use: exec.Cmd copies a child's output into it
// from a goroutine of its own while the caller may read it.
type Buffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

// New returns a Buffer that keeps the last max bytes (max > 0).
func New(max int) *Buffer { return &Buffer{max: max} }

// Write keeps the end of what was written so far, p included; it never
// fails.
func (t *Buffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// Len is how many bytes are kept, at most max.
func (t *Buffer) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.b)
}

// Bytes returns a copy of what is kept.
func (t *Buffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.b...)
}

// String returns what is kept, as written.
func (t *Buffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Trimmed returns what is kept without surrounding white space.
func (t *Buffer) Trimmed() string { return strings.TrimSpace(t.String()) }
