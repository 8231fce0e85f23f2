// SPDX-License-Identifier: Apache-2.0

package procmem

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadOnlyMappings: /proc/self/maps is the kernel's text
// (fs/proc/task_mmu.c, show_map_vma). Whatever it holds, every mapping
// read back is a non-empty range that a line of the text names, on the
// given path, private and not writable.
func FuzzReadOnlyMappings(f *testing.F) {
	f.Add("00400000-00c5e000 r-xp 00000000 fd:01 123 /usr/local/bin/op\n01a3f000-01a9b000 rw-p 0163f000 fd:01 123 /usr/local/bin/op\n", "/usr/local/bin/op")
	f.Add("7f0000000000-7f0000001000 r--s 00000000 fd:01 9 /usr/local/bin/op\nzzzz-0001 r--p 00000000 fd:01 123 /op\n", "/op")
	f.Add("ffffffffffffffff-0 r--p 0 0:0 0 /op\n1-2 r--p 0 0:0 0 /op (deleted)\n", "/op")
	f.Fuzz(func(t *testing.T, maps, path string) {
		for _, m := range readOnlyMappings([]byte(maps), path) {
			if m.end <= m.start {
				t.Fatalf("mapping %#x-%#x is empty or reversed", m.start, m.end)
			}
			if !strings.Contains(maps, path) {
				t.Fatalf("a mapping of %q from a text that never names it", path)
			}
		}
	})
}

// FuzzCgroupMemoryMax: /proc/self/cgroup (kernel/cgroup/cgroup.c,
// proc_cgroup_show) names the cgroup, and its memory.max holds the limit.
// Whatever both hold, the answer is a positive byte count, 0 (no
// limit), or an error naming memory.max; a cgroup path never leads the
// read outside root.
func FuzzCgroupMemoryMax(f *testing.F) {
	f.Add("0::/kubepods.slice/pod1.slice/cri-containerd-ab.scope\n", "67108864\n")
	f.Add("4:memory:/x\n0::/\n", "max\n")
	f.Add("0::/../../../etc\n", "lots\n")
	f.Add("0::/a\n", "9223372036854775807\n")
	f.Fuzz(func(t *testing.T, cgroup, memoryMax string) {
		dir := t.TempDir()
		root := filepath.Join(dir, "root")
		if err := os.MkdirAll(root, 0o755); err != nil {
			t.Fatal(err)
		}
		self := filepath.Join(dir, "cgroup")
		if err := os.WriteFile(self, []byte(cgroup), 0o644); err != nil {
			t.Fatal(err)
		}
		// Only root's own memory.max exists, and a decoy outside root.
		if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte(memoryMax), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte("12345\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := cgroupMemoryMax(root, self)
		switch {
		case err != nil:
			if n != 0 || !strings.Contains(err.Error(), "memory.max") {
				t.Fatalf("%d, %v", n, err)
			}
		case n < 0:
			t.Fatalf("limit %d", n)
		case n == 12345 && strings.TrimSpace(memoryMax) != "12345":
			t.Fatalf("cgroup %q read memory.max outside the root", cgroup)
		}
	})
}
