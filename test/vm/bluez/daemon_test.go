// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package bluez

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/test/vm/guest"
)

// busSocket is where the entrypoint's system bus listens in the guest.
const busSocket = "/run/liken-bluetooth/system_bus_socket"

var busAddress = "unix:path=" + busSocket

// daemon is one run of the bluetoothd image's entrypoint: dbus-daemon,
// and bluetoothd in the entrypoint's own process.
type daemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	log    string
	bus    int // dbus-daemon's pid
	client *bluez.Client
}

// startBluetoothd runs the entrypoint as the pod would (only the bus
// address set) and connects the operator's BlueZ client to its bus.
func startBluetoothd(t *testing.T) *daemon {
	t.Helper()
	return startBluetoothdWith(t)
}

// startBluetoothdWith is startBluetoothd with the entrypoint started by
// the command prefix (e.g. setpriv and its arguments), which must exec it
// in its own process. The entrypoint exits 1 when its bus accepts no
// client within its wait (dbusd.DefaultReadyTimeout), which a loaded VM
// has taken; the kubelet then starts the container again, and so does
// this, three times at most.
func startBluetoothdWith(t *testing.T, prefix ...string) *daemon {
	t.Helper()
	var d *daemon
	for attempt := 1; ; attempt++ {
		var err error
		if d, err = startEntrypoint(t, prefix); err == nil {
			break
		}
		if attempt == 3 || !strings.Contains(d.output(), "bluetoothd entrypoint: start the system bus") {
			t.Fatalf("connect to bluetoothd: %v\n%s", err, d.output())
		}
		t.Logf("the entrypoint exited before its bus came up (attempt %d), and is started again as the kubelet restarts a container:\n%s", attempt, d.output())
	}
	if d.bus == 0 {
		d.stop()
		t.Fatalf("no dbus-daemon below the entrypoint (pid %d)\n%s", d.cmd.Process.Pid, d.output())
	}
	// What ran is what the entrypoint exec'd: bluetoothd in its process.
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(d.cmd.Process.Pid) + "/exe")
	if exe != "/usr/libexec/bluetooth/bluetoothd" {
		t.Errorf("the entrypoint's process runs %q, want bluetoothd", exe)
	}
	return d
}

// startEntrypoint starts the entrypoint once and connects the operator's
// BlueZ client to its bus; on error the daemon is stopped, and its output
// kept.
func startEntrypoint(t *testing.T, prefix []string) (*daemon, error) {
	t.Helper()
	d := &daemon{t: t, log: filepath.Join(t.TempDir(), "entrypoint.log")}
	// A file, not a pipe: dbus-daemon inherits it and outlives the
	// entrypoint's process, and a pipe would hold Wait until it ends.
	out, err := os.Create(d.log)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	argv := append(append([]string(nil), prefix...), guest.Entrypoint)
	d.cmd = exec.Command(argv[0], argv[1:]...)
	d.cmd.Env = append(os.Environ(), bluez.AddressEnv+"="+busAddress)
	d.cmd.Stdout, d.cmd.Stderr = out, out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d.client, err = bluez.Connect(ctx, bluez.Options{Address: busAddress, Wait: 20 * time.Second})
	d.bus = busChild(d.cmd.Process.Pid)
	if err != nil {
		d.client = nil
		d.stop()
		return d, err
	}
	return d, nil
}

// busChild returns the pid of the dbus-daemon below the entrypoint's
// process pid, or 0.
func busChild(pid int) int {
	for _, c := range children(pid) {
		if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(c) + "/comm"); strings.TrimSpace(string(comm)) == "dbus-daemon" {
			return c
		}
	}
	return 0
}

func (d *daemon) output() string {
	data, _ := os.ReadFile(d.log)
	return string(data)
}

// stop ends bluetoothd with SIGTERM, as the kubelet would, then the bus,
// and waits until both are gone.
func (d *daemon) stop() {
	if d.client != nil {
		d.client.Close()
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			d.t.Logf("bluetoothd ended: %v", err)
		}
	case <-time.After(30 * time.Second):
		d.t.Errorf("bluetoothd did not end within 30 s of SIGTERM")
		d.cmd.Process.Kill()
		<-done
	}
	if d.bus != 0 {
		syscall.Kill(d.bus, syscall.SIGTERM)
		if !guest.WaitFor(30*time.Second, func() bool { return gone(d.bus) }) {
			d.t.Errorf("dbus-daemon %d did not end within 30 s of SIGTERM", d.bus)
			syscall.Kill(d.bus, syscall.SIGKILL)
		}
	}
}

// children lists the pids whose parent is pid.
func children(pid int) []int {
	var out []int
	for _, stat := range guest.Glob("/proc/[0-9]*/stat") {
		if ppid, ok := statField(stat, 1); ok && ppid == strconv.Itoa(pid) {
			n, _ := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
			out = append(out, n)
		}
	}
	return out
}

// gone reports whether pid has exited: no process, or a zombie that the
// guest's init has not reaped.
func gone(pid int) bool {
	state, ok := statField("/proc/"+strconv.Itoa(pid)+"/stat", 0)
	return !ok || state == "Z"
}

// statField returns field i after the command in /proc/<pid>/stat (0 is
// the state, 1 the parent's pid); the command may hold spaces, so the
// fields are counted from its closing parenthesis.
func statField(path string, i int) (string, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	s := string(data)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return "", false
	}
	f := strings.Fields(s[end+1:])
	if i >= len(f) {
		return "", false
	}
	return f[i], true
}
