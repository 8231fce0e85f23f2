// SPDX-License-Identifier: Apache-2.0

package uevent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The child half of TestListenWithoutCapabilities: when this variable holds
// a UUID, the test binary listens, says "ready", and waits for the event
// carrying that UUID.
const childEnv = "LIKEN_UEVENT_CHILD_UUID"

func TestMain(m *testing.M) {
	if uuid := os.Getenv(childEnv); uuid != "" {
		os.Exit(child(uuid))
	}
	os.Exit(m.Run())
}

func child(uuid string) int {
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "Uid:") || strings.HasPrefix(line, "CapEff:") {
			fmt.Println(strings.Join(strings.Fields(line), " "))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := Listen(ctx, Options{})
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	fmt.Println("ready")
	for ev := range l.Events() {
		if ev.Env["SYNTH_UUID"] == uuid {
			fmt.Printf("received %s %s %s\n", ev.Action, ev.DevPath, ev.Subsystem)
			return 0
		}
	}
	fmt.Println("stopped:", l.Err(), ctx.Err())
	return 1
}

// TestListenWithoutCapabilities proves deploy/bluetooth/operator.yaml's claim that binding group 1
// takes no capability (NL_CFG_F_NONROOT_RECV): a copy of this test binary
// runs as uid/gid 65534, with an empty effective capability set, and
// receives a real kernel event.
func TestListenWithoutCapabilities(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatalf("this test drops from root to uid 65534 and writes to sysfs; run it as root (uid is %d)", os.Getuid())
	}
	// The go test build directory is private to root: run a copy that
	// uid 65534 can execute.
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "uevent.test")
	copyFile(t, self, bin)

	uuid := newUUID(t)
	cmd := exec.Command(bin)
	cmd.Env = []string{childEnv + "=" + uuid}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var got []string
	deadline := time.After(90 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				err := cmd.Wait()
				t.Fatalf("child ended (%v) without receiving the event; it said %q", err, got)
			}
			got = append(got, line)
			switch {
			case line == "ready":
				trigger(t, "change", uuid, "nocaps")
			case strings.HasPrefix(line, "received "):
				if line != "received change /devices/virtual/net/lo net" {
					t.Errorf("child received %q", line)
				}
				if err := cmd.Wait(); err != nil {
					t.Errorf("child exit: %v", err)
				}
				assertUnprivileged(t, got)
				return
			}
		case <-deadline:
			t.Fatalf("no event in the unprivileged child within 90s; it said %q", got)
		}
	}
}

func assertUnprivileged(t *testing.T, said []string) {
	t.Helper()
	var uid, capEff bool
	for _, line := range said {
		uid = uid || line == "Uid: 65534 65534 65534 65534"
		capEff = capEff || line == "CapEff: 0000000000000000"
	}
	if !uid || !capEff {
		t.Errorf("child was not unprivileged: %q", said)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
