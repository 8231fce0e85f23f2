// SPDX-License-Identifier: Apache-2.0

//go:build kubelettier

package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRecoverAfterAKilledRun changes the host in every way a node run
// does, leaves a process of the run alive, and recovers from the record
// alone, as the next run does after one was killed: nothing differs
// afterwards. It changes the real host (root), so it runs in the kubelet
// tier only, never beside a node run.
func TestRecoverAfterAKilledRun(t *testing.T) {
	bin := t.TempDir()
	sleep, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "containerd"), sleep, 0o755); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(t.TempDir(), "host.json")
	h, err := Snapshot(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Save(record); err != nil {
		t.Fatal(err)
	}
	// A failure below still puts the host back.
	t.Cleanup(func() {
		if _, err := os.Stat(record); err == nil {
			if err := Recover(record); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})

	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	forward := h.Sysctls["net.ipv4.ip_forward"]
	flipped := map[string]string{"0": "1", "1": "0"}[forward]
	if err := os.WriteFile(sysctlPath("net.ipv4.ip_forward"), []byte(flipped), 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := "/run/liken-tier/mnt"
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(mnt+"/inner", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt+"/inner", "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	roots, err := cgroupRoots()
	if err != nil || len(roots) == 0 {
		t.Fatalf("cgroup roots %v: %v", roots, err)
	}
	cg := filepath.Join(roots[0], "liken-node-test", "child")
	if err := os.MkdirAll(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	run("ip", "link", "add", "liken-test0", "type", "bridge")
	run("iptables", "-N", "LIKEN-NODE-TEST")
	run("iptables", "-t", "mangle", "-N", "LIKEN-NODE-TEST")
	run("ip6tables", "-N", "LIKEN-NODE-TEST")
	// A stand-in device node in a directory of its own below /dev.
	devNode := "/dev/liken-node-test/event0"
	if err := h.CreateCharDevice(record, devNode, 13, 64); err != nil {
		t.Fatal(err)
	}
	left := exec.Command(filepath.Join(bin, "containerd"), "600")
	left.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	go left.Wait()

	diff, err := h.Diff()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sysctl net.ipv4.ip_forward", "mount left: " + mnt, "cgroup left: " + filepath.Dir(cg), "network link left: liken-test0", "iptables rules differ", "ip6tables rules differ", "directory left: /run/liken-tier", "device node left: " + devNode, "directory left: /dev/liken-node-test", "process left"} {
		if !strings.Contains(strings.Join(diff, "\n"), want) {
			t.Errorf("Diff does not report %q:\n%s", want, strings.Join(diff, "\n"))
		}
	}

	began := time.Now()
	if err := Recover(record); err != nil {
		t.Fatal(err)
	}
	t.Logf("recovered in %s", time.Since(began).Round(time.Millisecond))
	if diff, err := h.Diff(); err != nil || len(diff) > 0 {
		t.Fatalf("after Recover: %v\n%s", err, strings.Join(diff, "\n"))
	}
	if _, err := os.Stat(record); !os.IsNotExist(err) {
		t.Errorf("the record is still there: %v", err)
	}
}
