// SPDX-License-Identifier: Apache-2.0

package child

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/test/poll"
)

func TestStartStopTail(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	p, err := Start(log, os.Environ(), "/bin/sh", "-c", "echo one; echo two; exec sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	poll.WaitFor(t, context.Background(), "the child's second line", 30*time.Second, func() (bool, string) {
		got := Tail(log, 1)
		return got == "two", "tail " + got
	})
	if p.Exited() {
		t.Fatal("exited early")
	}
	p.Stop()
	if !p.Exited() || p.Err() == nil || !strings.Contains(p.Err().Error(), "terminated") {
		t.Fatalf("after Stop: exited %v, err %v", p.Exited(), p.Err())
	}
	if _, err := Start(log, nil, "/nonexistent/binary"); err == nil {
		t.Fatal("started a missing binary")
	}
	if got := Tail(filepath.Join(t.TempDir(), "none"), 3); !strings.HasPrefix(got, "(") {
		t.Fatalf("tail of a missing file: %q", got)
	}
}
