// SPDX-License-Identifier: Apache-2.0

package audioapi

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"
)

// stalledBody is a tap body as the capture container sends it for a
// span with a begin: the format's header at once, then nothing until
// the begin, then the samples.
func stalledBody(header, samples int, stall time.Duration) io.ReadCloser {
	r, w := io.Pipe()
	go func() {
		_, _ = w.Write(make([]byte, header))
		time.Sleep(stall)
		_, _ = w.Write(make([]byte, samples))
		_ = w.Close()
	}()
	return r
}

// TestStreamIdleWaitsForBegin runs in synctest bubbles
// (pkg.go.dev/testing/synctest): the stall, the idle timeout and the begin
// are on a fake clock, exact however loaded the host is.
func TestStreamIdleWaitsForBegin(t *testing.T) {
	defer func(d time.Duration) { idleTimeout = d }(idleTimeout)
	idleTimeout = 200 * time.Millisecond
	const stall = 600 * time.Millisecond

	t.Run("quiet until begin", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := &recorder{ResponseWriter: httptest.NewRecorder()}
			body := stalledBody(44, 1000, stall)
			n, cut, why := (&server{}).stream(context.Background(), w, body, nil, time.Now().Add(stall))
			if cut || why != nil || n != 1044 {
				t.Errorf("a body quiet until its begin: %d bytes, cut %v, why %v; want all 1044 bytes, not cut", n, cut, why)
			}
		})
	})
	t.Run("quiet after begin", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := &recorder{ResponseWriter: httptest.NewRecorder()}
			body := stalledBody(44, 1000, stall)
			n, cut, _ := (&server{}).stream(context.Background(), w, body, nil, time.Now())
			if !cut || n != 44 {
				t.Errorf("a body quiet for %s past its begin: %d bytes, cut %v; want 44 bytes, cut after %s", stall, n, cut, idleTimeout)
			}
			time.Sleep(stall) // the body's writer ends: its write fails on the closed pipe
		})
	})
}
