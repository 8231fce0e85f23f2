// SPDX-License-Identifier: Apache-2.0

package dbusd

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/liken-sh/operators/test/poll"
)

// startBus starts a daemon on a socket in a fresh directory and stops it
// at cleanup.
func startBus(t *testing.T, opts Options) *Daemon {
	t.Helper()
	if opts.SocketPath == "" {
		opts.SocketPath = filepath.Join(t.TempDir(), "system_bus_socket")
	}
	opts.DieWithParent = true
	d, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return d
}

// requestName asks the bus for name and returns the error, if any.
func requestName(t *testing.T, address, name string) error {
	t.Helper()
	conn, err := dbus.Connect(address)
	if err != nil {
		t.Fatalf("connect %s: %v", address, err)
	}
	defer conn.Close()
	reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue)
	if err != nil {
		return err
	}
	if reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("RequestName(%s) = %v, want primary owner", name, reply)
	}
	return nil
}

// uidOf reads the real uid of a process from /proc.
func uidOf(t *testing.T, pid int) int {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "Uid:"); ok {
			uid, err := strconv.Atoi(strings.Fields(rest)[0])
			if err != nil {
				t.Fatal(err)
			}
			return uid
		}
	}
	t.Fatalf("no Uid line for pid %d", pid)
	return -1
}

// The system policy is the distribution's: BlueZ's bluetooth.conf lets
// root own org.bluez, and the default policy denies any other name.
func TestSystemPolicyLoadsBlueZPolicy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("owning org.bluez under BlueZ's policy takes root; run the tests as root, as CI does")
	}
	d := startBus(t, Options{Policy: PolicySystem, KeepUser: true})
	if err := requestName(t, d.Address(), "org.bluez"); err != nil {
		t.Fatalf("root could not own org.bluez, so bluetooth.conf is not loaded: %v", err)
	}
	err := requestName(t, d.Address(), "com.example.NotAllowed")
	var dbusErr dbus.Error
	if !errors.As(err, &dbusErr) || dbusErr.Name != "org.freedesktop.DBus.Error.AccessDenied" {
		t.Fatalf("owning an arbitrary name: %v, want AccessDenied from the system default policy", err)
	}
	if got := uidOf(t, d.Pid()); got != 0 {
		t.Errorf("KeepUser daemon runs as uid %d, want 0", got)
	}
}

// Without KeepUser the daemon drops to messagebus after binding, exactly
// as in the bluetoothd container, and still serves.
func TestSystemPolicyDropsToMessagebus(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("dropping to messagebus takes root; run the tests as root, as CI does")
	}
	d := startBus(t, Options{Policy: PolicySystem})
	if got := uidOf(t, d.Pid()); got == 0 {
		t.Fatalf("daemon still runs as root, want the messagebus user")
	}
	if err := requestName(t, d.Address(), "org.bluez"); err != nil {
		t.Fatalf("org.bluez: %v", err)
	}
	sock := d.SocketPath()
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket %s still there after Stop: %v", sock, err)
	}
	select {
	case <-d.Done():
	default:
		t.Error("Done not closed after Stop")
	}
}

func TestOpenPolicyAllowsAnyName(t *testing.T) {
	d := startBus(t, Options{Policy: PolicyOpen})
	if err := requestName(t, d.Address(), "com.example.Anything"); err != nil {
		t.Fatalf("open policy denied a name: %v", err)
	}
}

// A stale socket left by a killed daemon is replaced, and the new bus
// answers on it.
func TestStaleSocketReplaced(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "system_bus_socket")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if err := probe(sock); err == nil {
		t.Fatal("a closed listener's socket accepted a client")
	}
	d := startBus(t, Options{SocketPath: sock, Policy: PolicyOpen})
	if err := probe(d.SocketPath()); err != nil {
		t.Fatalf("new bus does not answer: %v", err)
	}
}

// A regular file where the socket should be is not ours: it is an error
// and the file survives.
func TestNonSocketInTheWay(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "system_bus_socket")
	if err := os.WriteFile(sock, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{SocketPath: sock, Policy: PolicyOpen, DieWithParent: true})
	if err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Fatalf("Start = %v, want an error saying the path is not a socket", err)
	}
	if data, _ := os.ReadFile(sock); string(data) != "keep me" {
		t.Errorf("file in the way was changed: %q", data)
	}
}

// A daemon that exits at once is reported at once, with its status and
// output, not after the ready timeout.
func TestDaemonExitsEarly(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "dbus-daemon")
	script := "#!/bin/sh\necho 'cannot start: no such user' >&2\nexit 3\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	_, err := Start(context.Background(), Options{
		SocketPath: filepath.Join(dir, "s"), Policy: PolicyOpen, Binary: fake, ReadyTimeout: time.Minute,
	})
	if !errors.Is(err, ErrExited) {
		t.Fatalf("Start = %v, want ErrExited", err)
	}
	for _, want := range []string{"exit status 3", "cannot start: no such user"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// Only the ready timeout (a minute) makes it this late; a slow host
	// does not.
	if took := time.Since(begin); took > 30*time.Second {
		t.Errorf("early exit reported after %v", took)
	}
}

// A daemon that never listens is stopped when the bound passes.
func TestDaemonNeverReady(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "dbus-daemon")
	pidFile := filepath.Join(dir, "pid")
	script := "#!/bin/sh\necho $$ > " + pidFile + "\nexec sleep 60\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// The stop is seen only if the script wrote its pid before the
	// bound passed; on a host too slow for that, the bound doubles and
	// the daemon starts again.
	bound := 300 * time.Millisecond
	var data []byte
	poll.WaitFor(t, context.Background(), "a daemon that wrote its pid before its bound passed", 2*time.Minute, func() (bool, string) {
		_, err := Start(context.Background(), Options{
			SocketPath: filepath.Join(dir, "s"), Policy: PolicyOpen, Binary: fake,
			ReadyTimeout: bound, DieWithParent: true,
		})
		if !errors.Is(err, ErrNotReady) {
			t.Fatalf("Start = %v, want ErrNotReady", err)
		}
		var rerr error
		if data, rerr = os.ReadFile(pidFile); rerr != nil {
			bound *= 2
			return false, rerr.Error()
		}
		return true, ""
	})
	pid := strings.TrimSpace(string(data))
	if _, err := os.Stat("/proc/" + pid); err == nil {
		t.Errorf("daemon %s still running after a failed Start", pid)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, ".dbus-daemon-*.conf")); len(matches) > 0 {
		t.Errorf("generated configuration left behind: %v", matches)
	}
}

func TestWaitReadyHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := WaitReady(ctx, filepath.Join(t.TempDir(), "absent"), time.Minute, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitReady = %v, want context.Canceled", err)
	}
}
