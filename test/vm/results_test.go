// SPDX-License-Identifier: Apache-2.0

package vm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sampleLog = `=== RUN   TestVMHID
    vm_test.go:40: uhid device 0005:1D6B:0246.0001
--- PASS: TestVMHID (0.31s)
=== RUN   TestVMHCI
=== RUN   TestVMHCI/hci0
--- FAIL: TestVMHCI (2.00s)
    --- PASS: TestVMHCI/hci0 (1.10s)
    --- SKIP: TestVMHCI/hci1 (0.00s)
FAIL
`

func TestCollect(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("good.log", "=== RUN   TestVMA\n--- PASS: TestVMA (0.01s)\nPASS\n")
	write("good.rc", "0\n")
	write("bad.log", sampleLog)
	write("bad.rc", "1\n")
	write("hung.log", "=== RUN   TestVMB\n")
	write("empty.log", "testing: warning: no tests to run\nPASS\n")
	write("empty.rc", "0\n")

	rs := Collect(dir, []string{"good", "bad", "hung", "empty", "absent"})
	if len(rs) != 5 {
		t.Fatalf("Collect returned %d results, want 5", len(rs))
	}
	if err := rs[0].Err(); err != nil {
		t.Errorf("good: %v", err)
	}
	want := map[string][]string{
		"bad":    {"status 1", "skipped TestVMHCI/hci1"},
		"hung":   {"no exit status", "no passing test"},
		"empty":  {"no passing test"},
		"absent": {"no exit status", "no passing test"},
	}
	for _, r := range rs[1:] {
		err := r.Err()
		if err == nil {
			t.Errorf("%s: no error", r.Guest)
			continue
		}
		for _, w := range want[r.Guest] {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", r.Guest, err, w)
			}
		}
	}
	got := rs[1].Tests
	if len(got) != 4 || got[0] != (TestLine{"PASS", "TestVMHID", "0.31s"}) || got[2] != (TestLine{"PASS", "TestVMHCI/hci0", "1.10s"}) {
		t.Errorf("bad's tests = %+v", got)
	}
}

func TestFigures(t *testing.T) {
	r := Result{Log: []byte("=== RUN   TestVMRelayCost\n    vm_test.go:412: figure: relay at 1,000 events/s: 0.1 % of a core (target <= 0.5 %)\n    vm_test.go:413: not a figure\nfigure: not a log line\n--- PASS: TestVMRelayCost (12.00s)\n")}
	got := r.Figures()
	if len(got) != 1 || got[0] != "figure: relay at 1,000 events/s: 0.1 % of a core (target <= 0.5 %)" {
		t.Errorf("Figures() = %q", got)
	}
}
