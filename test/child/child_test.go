// SPDX-License-Identifier: Apache-2.0

package child

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStartStopTail(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	p, err := Start(log, os.Environ(), "/bin/sh", "-c", "echo one; echo two; exec sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for Tail(log, 1) != "two" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := Tail(log, 1); got != "two" {
		t.Fatalf("tail %q", got)
	}
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
