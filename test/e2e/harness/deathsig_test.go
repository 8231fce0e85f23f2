// SPDX-License-Identifier: Apache-2.0

package harness_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/liken-sh/operators/test/e2e/harness"
)

// childEnv, when set, turns this test binary into the child of
// TestChildrenDieWithTest: it starts a cluster in the named directory,
// says so, and panics when its stdin closes, with no cleanup.
const childEnv = "LIKEN_E2E_PANICKING_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		c, err := harness.Start(context.Background(), harness.Options{Dir: dir, WithoutScheduler: true, WithoutControllerManager: true})
		if err != nil {
			println(err.Error())
			os.Exit(2)
		}
		println("READY " + c.Host())
		bufio.NewReader(os.Stdin).ReadString('\n')
		panic("test panics with its control plane running")
	}
	os.Exit(m.Run())
}

// TestChildrenDieWithTest proves the Pdeathsig wiring: when a test binary
// panics, its etcd and kube-apiserver die with it though Stop never ran.
func TestChildrenDieWithTest(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stderr)
	for ready := false; !ready; {
		if !lines.Scan() {
			t.Fatal("child ended before its cluster was ready")
		}
		t.Log("child: " + lines.Text())
		ready = len(lines.Text()) > 5 && lines.Text()[:5] == "READY"
	}
	go func() {
		for lines.Scan() { // drain so the child never blocks writing its panic
		}
	}()

	pids := processesIn(t, dir)
	if len(pids) != 2 {
		t.Fatalf("found %d processes running in %s, want etcd and kube-apiserver", len(pids), dir)
	}
	stdin.Close()
	if err := cmd.Wait(); err == nil {
		t.Fatal("child exited cleanly, want a panic")
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(processesIn(t, dir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes %v outlived the test binary that started them", processesIn(t, dir))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processesIn lists the pids whose working directory is dir: the harness
// starts every component there.
func processesIn(t *testing.T, dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && cwd == dir {
			pids = append(pids, pid)
		}
	}
	return pids
}
