// SPDX-License-Identifier: Apache-2.0

package procmem

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestCgroupMemoryMax(t *testing.T) {
	root := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pod := "kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope"
	write(filepath.Join(root, pod, "memory.max"), "67108864\n")
	write(filepath.Join(root, "memory.max"), "max\n")
	write(filepath.Join(root, "bad", "memory.max"), "lots\n")
	for name, c := range map[string]struct {
		self    string
		want    int64
		wantErr bool
	}{
		"the container's own":             {"0::/" + pod + "\n", 64 << 20, false},
		"namespaced root, no limit":       {"0::/\n", 0, false},
		"path not under the mount":        {"0::/elsewhere/x\n", 0, false},
		"cgroup v1 only":                  {"4:memory:/x\n", 0, false},
		"hybrid: the v2 line counts":      {"4:memory:/x\n0::/" + pod + "\n", 64 << 20, false},
		"unreadable value names its file": {"0::/bad\n", 0, true},
	} {
		self := filepath.Join(t.TempDir(), "cgroup")
		write(self, c.self)
		got, err := cgroupMemoryMax(root, self)
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("%s: %d, %v; want %d, error %v", name, got, err, c.want, c.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "memory.max") {
			t.Errorf("%s: error %q does not name memory.max", name, err)
		}
	}
}

func TestSetLimitFromCgroupLeavesAnExplicitGOMEMLIMIT(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "100MiB")
	before := debug.SetMemoryLimit(-1)
	if got, err := SetLimitFromCgroup(0.5); got != 0 || err != nil {
		t.Errorf("with GOMEMLIMIT set: %d, %v; want 0, nil", got, err)
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Errorf("limit changed from %d to %d", before, after)
	}
	os.Unsetenv("GOMEMLIMIT")
	if _, err := SetLimitFromCgroup(1.5); err == nil {
		t.Error("a fraction above 1 was taken")
	}
}

func TestReadOnlyMappings(t *testing.T) {
	maps := `00400000-00c5e000 r-xp 00000000 fd:01 123 /usr/local/bin/op
00c5e000-01a3f000 r--p 0085e000 fd:01 123 /usr/local/bin/op
01a3f000-01a9b000 rw-p 0163f000 fd:01 123 /usr/local/bin/op
01a9b000-01ad0000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r--s 00000000 fd:01 9 /usr/local/bin/op
7f0000002000-7f0000003000 r--p 00000000 fd:01 9 /usr/local/bin/other
zzzz-0001 r--p 00000000 fd:01 123 /usr/local/bin/op
`
	got := readOnlyMappings([]byte(maps), "/usr/local/bin/op")
	want := []mapping{{0x400000, 0xc5e000}, {0xc5e000, 0x1a3f000}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(mapping{})); diff != "" {
		t.Errorf("mappings (-want +got):\n%s", diff)
	}
}

// TestReleaseStartupMemory drops this test binary's read-only mappings:
// RssFile falls, and the process goes on running the code it dropped.
func TestReleaseStartupMemory(t *testing.T) {
	before := rssFileKB(t)
	dropped, err := ReleaseStartupMemory()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKB(t)
	if dropped <= 0 || after >= before {
		t.Errorf("dropped %d bytes of mappings; RssFile %d kB before, %d kB after", dropped, before, after)
	}
	t.Logf("dropped %d MiB of mappings; RssFile %d kB before, %d kB after", dropped>>20, before, after)
}

func rssFileKB(t *testing.T) int64 {
	t.Helper()
	n, err := rssFile()
	if err != nil {
		t.Fatal(err)
	}
	return n >> 10
}

// TestReleaseAfterBursts: at rest nothing is released; once RssFile has
// grown by the set amount (a file mapped and read, standing in for code a
// burst touched) and stopped growing, the binary's mappings are dropped
// once, and not again while nothing else grows.
func TestReleaseAfterBursts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type release struct {
		dropped int64
		err     error
	}
	got := make(chan release, 16)
	const interval, growth = 50 * time.Millisecond, 4 << 20
	ReleaseAfterBursts(ctx, interval, growth, func(dropped int64, err error) { got <- release{dropped, err} })
	select {
	case r := <-got:
		t.Fatalf("released at rest: %+v", r)
	case <-time.After(10 * interval):
	}

	path := filepath.Join(t.TempDir(), "burst")
	if err := os.WriteFile(path, bytes.Repeat([]byte{1}, 2*growth), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, 2*growth, unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Munmap(m) }()
	var sum byte
	for i := 0; i < len(m); i += os.Getpagesize() {
		sum += m[i]
	}
	t.Logf("touched %d MiB of a mapped file (sum %d)", len(m)>>20, sum)
	select {
	case r := <-got:
		if r.err != nil || r.dropped <= 0 {
			t.Fatalf("release after the burst: dropped %d bytes, error %v", r.dropped, r.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("no release within a minute of a burst")
	}
	select {
	case r := <-got:
		t.Fatalf("released again with nothing grown: %+v", r)
	case <-time.After(10 * interval):
	}
}
