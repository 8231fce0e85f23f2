// SPDX-License-Identifier: Apache-2.0

package regularfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, []byte("12345"), 0o600)
	if b, err := Read(file, 5); err != nil || string(b) != "12345" {
		t.Fatalf("regular file: %q %v", b, err)
	}
	if _, err := Read(file, 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
	link := filepath.Join(dir, "l")
	os.Symlink(file, link)
	fifo := filepath.Join(dir, "p")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{link: "symbolic link", fifo: "named pipe", dir: "directory"} {
		done := make(chan error, 1)
		go func() { _, err := Read(path, 10); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), kind) {
				t.Errorf("%s: %v", kind, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("reading a %s blocked", kind)
		}
	}
}
