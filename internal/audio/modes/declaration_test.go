// SPDX-License-Identifier: Apache-2.0

package modes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/liken-sh/operators/test/poll"
)

func TestDeclarationAfter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "60-liken-outputs.conf")
	start := time.Now()
	if after, why := declarationAfter(path, start, start); after || why != "no declaration" {
		t.Errorf("missing file: %v, %q", after, why)
	}
	writeFile(t, path, "context.objects = []\n")
	set := func(mtime time.Time) {
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	now := start.Add(10 * time.Second)
	for _, tc := range []struct {
		name  string
		mtime time.Time
		after bool
		why   string
	}{
		{"written before PipeWire started", start.Add(-time.Second), false, "declaration loaded"},
		{"written at the fork", start, false, "declaration loaded"},
		{"written after PipeWire started", start.Add(time.Second), true, "after PipeWire started"},
		{"modified in the future", now.Add(time.Hour), false, "in the future"},
	} {
		set(tc.mtime)
		after, why := declarationAfter(path, start, now)
		if after != tc.after || !strings.Contains(why, tc.why) {
			t.Errorf("%s: %v, %q; want %v and %q", tc.name, after, why, tc.after, tc.why)
		}
	}
	if err := os.Chmod(dir, 0); err == nil && os.Geteuid() != 0 {
		defer os.Chmod(dir, 0o755)
		if after, why := declarationAfter(path, start, now); after || !strings.Contains(why, "unreadable") {
			t.Errorf("unreadable: %v, %q", after, why)
		}
	}
}

// watch runs watchDeclaration until the test ends and returns its wakes.
// When path's directory exists it returns once the directory is watched:
// a write before that passes unseen.
func watch(t *testing.T, path string, backstop time.Duration) <-chan struct{} {
	wake := make(chan struct{}, 1)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		watchDeclaration(path, backstop, wake, done, t.Logf)
	}()
	t.Cleanup(func() { close(done); <-ended })
	if _, err := os.Stat(filepath.Dir(path)); err == nil {
		waitWatched(t, filepath.Dir(path))
	}
	return wake
}

// waitWatched waits until an inotify instance of this process watches
// dir. proc(5): an inotify descriptor's /proc/self/fdinfo entry has one
// "inotify wd:... ino:<hex inode> ..." line per watch.
func waitWatched(t *testing.T, dir string) {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(" ino:%x ", fi.Sys().(*syscall.Stat_t).Ino)
	poll.Until(t, dir+" watched", 30*time.Second, func() bool {
		fds, _ := os.ReadDir("/proc/self/fdinfo")
		for _, fd := range fds {
			info, _ := os.ReadFile(filepath.Join("/proc/self/fdinfo", fd.Name()))
			for _, line := range strings.Split(string(info), "\n") {
				if strings.HasPrefix(line, "inotify wd:") && strings.Contains(line, want) {
					return true
				}
			}
		}
		return false
	})
}

func woke(wake <-chan struct{}, within time.Duration) bool {
	select {
	case <-wake:
		return true
	case <-time.After(within):
		return false
	}
}

func TestWatchDeclarationWakesOnItsFileOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "60-liken-outputs.conf")
	wake := watch(t, path, time.Hour) // no backstop within the test
	writeFile(t, filepath.Join(dir, "other.conf"), "x")
	if woke(wake, 200*time.Millisecond) {
		t.Fatal("woke for another file in the directory")
	}
	steps := []struct {
		what string
		do   func()
	}{
		{"created", func() { writeFile(t, path, "a") }},
		{"rewritten in place", func() { writeFile(t, path, "b") }},
		{"touched", func() { now := time.Now(); os.Chtimes(path, now, now) }},
		{"replaced by rename", func() {
			writeFile(t, path+".tmp", "c")
			if err := os.Rename(path+".tmp", path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, st := range steps {
		for woke(wake, 50*time.Millisecond) { // drain the last step's events
		}
		st.do()
		if !woke(wake, 30*time.Second) {
			t.Fatalf("declaration %s: no wake", st.what)
		}
	}
}

func TestWatchDeclarationBackstopCoversALateDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pipewire.conf.d")
	path := filepath.Join(dir, "60-liken-outputs.conf")
	wake := watch(t, path, 100*time.Millisecond)
	if !woke(wake, 30*time.Second) {
		t.Fatal("the backstop did not wake with no directory to watch")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A backstop tick sets the watch, seen in the kernel's own list of
	// this process's watches rather than timed against the 100 ms ticks,
	// which wake too.
	waitWatched(t, dir)
}

// A socket at PipeWire's path that the running PipeWire did not bind (one
// left by a PipeWire of an earlier pod, older than this pod's declaration)
// must not restart it. A stand-in daemon that never binds holds the
// moment between fork and bind open, which real PipeWire passes too fast
// to land a check in.
func TestPipeWireModeIgnoresASocketItsPipeWireDidNotBind(t *testing.T) {
	s := newSandbox(t)
	old := s.start(t, "old-pipewire", DefaultPipeWire, nil)
	eventually(t, 30*time.Second, "old PipeWire answers", func() bool { _, ok := s.dump(); return ok })
	old.cmd.Process.Kill()
	old.wait(t, 30*time.Second)
	time.Sleep(20 * time.Millisecond)
	s.declare(t, "liken_test_node") // newer than the stale socket
	if !modTime(t, s.declaration).After(modTime(t, s.socket())) {
		t.Fatal("test set-up: the declaration is not newer than the stale socket")
	}
	time.Sleep(20 * time.Millisecond)

	var log strings.Builder
	out := &syncWriter{w: &log}
	said := func() string { out.mu.Lock(); defer out.mu.Unlock(); return log.String() }
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		done <- PipeWire(ctx, []string{"60"}, Env{
			Environ: s.environ(), Stderr: out,
			PipeWire: "/bin/sleep", Declaration: s.declaration, DeclarationBackstop: 20 * time.Millisecond,
		})
	}()
	eventually(t, 30*time.Second, "the stand-in started", func() bool { return strings.Contains(said(), "started sleep") })
	// A restart would come at a check, every 20 ms; on a slow host fewer
	// checks pass, which can only let a restart go unseen.
	time.Sleep(500 * time.Millisecond)
	cancel()
	if code := <-done; code != 128+15 {
		t.Errorf("stand-in daemon stopped with SIGTERM: %d, want 143", code)
	}
	if n := strings.Count(log.String(), "started sleep"); n != 1 {
		t.Fatalf("started %d times, want once:\n%s", n, log.String())
	}
}

func modTime(t *testing.T, path string) time.Time {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}
