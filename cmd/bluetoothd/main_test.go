// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/liken-sh/operators/internal/dbusd"
	"github.com/liken-sh/operators/internal/supervise"
)

// envStandIn makes the test binary act as a stand-in bluetoothd: the real
// one exits at once on this kernel, so signal delivery and a process that
// stays up are shown with this one.
const envStandIn = "BLUETOOTHD_ENTRYPOINT_TEST_STANDIN"

// standInExit is the stand-in's exit status after SIGTERM, chosen to be
// unlike any status the entrypoint itself returns.
const standInExit = 42

// entrypoint is the built command under test.
var entrypoint string

func TestMain(m *testing.M) {
	if os.Getenv(envStandIn) == "1" {
		os.Exit(standIn())
	}
	dir, err := os.MkdirTemp("", "bluetoothd-entrypoint-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	entrypoint = filepath.Join(dir, "bluetoothd-entrypoint")
	build := exec.Command("go", "build", "-trimpath", "-o", entrypoint, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "build the entrypoint: %v\n", err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// standIn is what runs in bluetoothd's place: it reports what it was given,
// takes org.bluez as bluetoothd does, and exits with standInExit on
// SIGTERM.
func standIn() int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Printf("standin pid=%d args=%q address=%s\n", os.Getpid(), os.Args[1:], os.Getenv(EnvBusAddress))
	conn, err := dbus.ConnectSystemBus()
	if err != nil {
		fmt.Printf("standin bus: %v\n", err)
		return 3
	}
	if reply, err := conn.RequestName("org.bluez", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		fmt.Printf("standin org.bluez: %v %v\n", reply, err)
		return 4
	}
	fmt.Println("standin ready")
	<-term
	fmt.Println("standin terminated")
	return standInExit
}

// requireRoot fails (never skips) a test that needs root.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test starts the system bus, which drops to messagebus, in a new PID namespace: run it as root, as CI does")
	}
}

// pod is one run of the entrypoint.
type pod struct {
	dir, configDir, socketPath, address string
	cmd                                 *exec.Cmd
	bound                               *supervise.Bound
	stdout                              io.ReadCloser
	stderr                              bytes.Buffer
}

// newPod prepares a run with a bus socket in a directory that does not
// exist yet and a configuration directory of its own.
func newPod(t *testing.T) *pod {
	// Not t.TempDir: its long name would push the socket path past the
	// kernel's 107 bytes.
	dir, err := os.MkdirTemp("", "bt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &pod{dir: dir, configDir: filepath.Join(dir, "etc-bluetooth")}
	p.socketPath = filepath.Join(dir, "run", "bluetooth.liken.sh", "dbus", "system_bus_socket")
	p.address = dbusd.Address(p.socketPath)
	return p
}

// start runs the entrypoint with env added, as PID 1 of a new PID
// namespace like a container's init: when it ends, the kernel ends the bus
// with it.
func (p *pod) start(t *testing.T, env []string, args ...string) {
	t.Helper()
	p.cmd = exec.Command(entrypoint, append([]string{"-config-dir", p.configDir}, args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = &p.stderr
	// A pipe of the test's own, not exec's StdoutPipe: the reap, which
	// StartBound does as soon as the process exits, would close exec's
	// before the test has read the last lines.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdout, p.cmd.Stdout = r, w
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	p.bound, err = supervise.StartBound(p.cmd)
	w.Close()
	if err != nil {
		r.Close()
		t.Fatalf("start the entrypoint: %v", err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.bound.Done()
	})
}

// wait waits up to bound for the entrypoint (or what it exec'd) to exit
// and returns its exit status.
func (p *pod) wait(t *testing.T, bound time.Duration) int {
	t.Helper()
	go io.Copy(io.Discard, p.stdout)
	select {
	case <-p.bound.Done():
		err := p.bound.Wait()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("wait: %v", err)
		}
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(bound):
		p.cmd.Process.Kill()
		<-p.bound.Done()
		t.Fatalf("still running after %v; stderr:\n%s", bound, p.stderr.String())
		return -1
	}
}

func readFile(t *testing.T, path string) (string, os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data), fi.Mode().Perm()
}

// The real Debian bluetoothd, started through the entrypoint. It cannot
// reach a radio here and exits 1 with "Failed to access management
// interface" - a line it prints only after it has connected to the bus and
// owned org.bluez (the control test below shows the other line). So the
// bus came up with BlueZ's policy, bluetoothd was exec'd as PID 1 (its log
// prefix carries its PID), and its exit status became the process's.
func TestRealBluetoothdThroughEntrypoint(t *testing.T) {
	requireRoot(t)
	p := newPod(t)
	p.start(t, []string{EnvBusAddress + "=" + p.address, EnvClassicBondedOnly + "="})
	status := p.wait(t, 30*time.Second)
	out := p.stderr.String()
	t.Logf("output:\n%s", out)
	if status != 1 {
		t.Errorf("exit status %d, want bluetoothd's 1", status)
	}
	for _, want := range []string{
		"bluetoothd[1]: Bluetooth daemon",
		"Failed to access management interface",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, unwanted := range []string{"Unable to get on D-Bus", "bluetoothd entrypoint:"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("output has %q", unwanted)
		}
	}
	main, mode := readFile(t, filepath.Join(p.configDir, "main.conf"))
	if !strings.Contains(main, "[Policy]\nAutoEnable=true\n") || mode != 0o644 {
		t.Errorf("main.conf (%v):\n%s", mode, main)
	}
	input, mode := readFile(t, filepath.Join(p.configDir, "input.conf"))
	if !strings.Contains(input, "[General]\nClassicBondedOnly=true\n") || mode != 0o644 {
		t.Errorf("input.conf (%v):\n%s", mode, input)
	}
	if fi, err := os.Stat(filepath.Dir(p.socketPath)); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("socket directory: %v, %v; want mode 0755", fi, err)
	}
}

// The control for the test above: the same bluetoothd on a bus whose
// policy lets no one own a name says "Unable to get on D-Bus" instead.
func TestBluetoothdWithoutBlueZPolicyControl(t *testing.T) {
	dir := newPod(t).dir
	sock := filepath.Join(dir, "system_bus_socket")
	conf := filepath.Join(dir, "deny-own.conf")
	if err := os.WriteFile(conf, []byte(`<busconfig><type>system</type><auth>EXTERNAL</auth>
<listen>`+dbusd.Address(sock)+`</listen>
<policy context="default"><allow user="*"/><deny own="*"/>
<allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/></policy>
</busconfig>`), 0o644); err != nil {
		t.Fatal(err)
	}
	bus := exec.Command("dbus-daemon", "--nofork", "--nopidfile", "--config-file="+conf)
	busRun, err := supervise.StartBound(bus)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { bus.Process.Kill(); <-busRun.Done() }()
	if err := dbusd.WaitReady(context.Background(), sock, 30*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	bt := exec.Command(DefaultBluetoothd, "-n")
	bt.Env = append(os.Environ(), EnvBusAddress+"="+dbusd.Address(sock))
	out, err := bt.CombinedOutput()
	if err == nil {
		t.Fatalf("bluetoothd succeeded without a radio:\n%s", out)
	}
	if !strings.Contains(string(out), "Unable to get on D-Bus") || strings.Contains(string(out), "management interface") {
		t.Fatalf("bluetoothd on a bus that denies org.bluez said:\n%s", out)
	}
}

// With a stand-in that stays up: the process keeps the entrypoint's PID
// and becomes the exec'd program, inherits the bus address, owns org.bluez
// under the system policy (which still denies other names), receives
// SIGTERM, and its exit status is the process's. The bus ends with it.
func TestExecSignalsAndExitStatus(t *testing.T) {
	requireRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := newPod(t)
	p.start(t, []string{
		envStandIn + "=1", EnvBusAddress + "=" + p.address, EnvClassicBondedOnly + "=false",
	}, "-bluetoothd", self)

	lines := bufio.NewScanner(p.stdout)
	var first string
	ready := make(chan error, 1)
	go func() {
		for lines.Scan() {
			line := lines.Text()
			if strings.HasPrefix(line, "standin pid=") {
				first = line
			}
			if line == "standin ready" {
				ready <- nil
				return
			}
		}
		ready <- fmt.Errorf("stand-in output ended before ready (first line %q)", first)
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("%v; stderr:\n%s", err, p.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("stand-in not ready; stderr:\n%s", p.stderr.String())
	}

	want := fmt.Sprintf("standin pid=1 args=[\"-n\"] address=%s", p.address)
	if first != want {
		t.Errorf("stand-in reported %q, want %q", first, want)
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.cmd.Process.Pid))
	if err != nil || exe != self {
		t.Errorf("/proc/%d/exe = %q, %v; want the exec'd %q", p.cmd.Process.Pid, exe, err, self)
	}

	conn, err := dbus.Connect(p.address)
	if err != nil {
		t.Fatalf("connect to the pod's bus: %v", err)
	}
	var owner string
	if err := conn.BusObject().Call("org.freedesktop.DBus.GetNameOwner", 0, "org.bluez").Store(&owner); err != nil || owner == "" {
		t.Errorf("org.bluez has no owner: %q, %v", owner, err)
	}
	_, err = conn.RequestName("com.example.NotBlueZ", dbus.NameFlagDoNotQueue)
	var denied dbus.Error
	if !errors.As(err, &denied) || denied.Name != "org.freedesktop.DBus.Error.AccessDenied" {
		t.Errorf("owning an arbitrary name: %v, want AccessDenied from the system policy", err)
	}
	conn.Close()

	input, _ := readFile(t, filepath.Join(p.configDir, "input.conf"))
	if !strings.Contains(input, "ClassicBondedOnly=false\n") {
		t.Errorf("input.conf:\n%s", input)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(p.stdout)
	if status := p.wait(t, 30*time.Second); status != standInExit {
		t.Errorf("exit status %d, want the stand-in's %d; stderr:\n%s", status, standInExit, p.stderr.String())
	}
	if !strings.Contains(string(rest), "standin terminated") {
		t.Errorf("stand-in did not see SIGTERM; it printed %q", rest)
	}
	if err := dbusd.WaitReady(context.Background(), p.socketPath, 200*time.Millisecond, nil); err == nil {
		t.Error("the bus still answers after the pod's init exited")
	}
}

// Bad input exits 1 with a message naming the variable and value, before
// anything is written or started.
func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, address, bondedOnly, want string
	}{
		{"tcp address", "tcp:host=localhost,port=4000", "", `DBUS_SYSTEM_BUS_ADDRESS: D-Bus address "tcp:host=localhost,port=4000"`},
		{"abstract socket", "unix:abstract=/tmp/bus", "", `DBUS_SYSTEM_BUS_ADDRESS: D-Bus address "unix:abstract=/tmp/bus"`},
		{"relative path", "unix:path=run/bus", "", "is not absolute"},
		{"yes", "", "yes", `BLUETOOTH_CLASSIC_BONDED_ONLY="yes": want exactly "true" or "false"`},
		{"one", "", "1", `BLUETOOTH_CLASSIC_BONDED_ONLY="1"`},
		{"capitalised", "", "True", `BLUETOOTH_CLASSIC_BONDED_ONLY="True"`},
		{"trailing space", "", "false ", `BLUETOOTH_CLASSIC_BONDED_ONLY="false "`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod(t)
			address := tc.address
			if address == "" {
				address = p.address
			}
			// A configuration already there must survive bad input.
			if err := os.MkdirAll(p.configDir, 0o755); err != nil {
				t.Fatal(err)
			}
			sentinel := filepath.Join(p.configDir, "input.conf")
			if err := os.WriteFile(sentinel, []byte("[General]\nClassicBondedOnly=true\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(entrypoint, "-config-dir", p.configDir)
			cmd.Env = append(os.Environ(), EnvBusAddress+"="+address, EnvClassicBondedOnly+"="+tc.bondedOnly)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("exit: %v, want status 1; output:\n%s", err, out)
			}
			if !strings.Contains(string(out), "bluetoothd entrypoint: ") || !strings.Contains(string(out), tc.want) {
				t.Errorf("output %q lacks %q", out, tc.want)
			}
			if data, _ := os.ReadFile(sentinel); string(data) != "[General]\nClassicBondedOnly=true\n" {
				t.Errorf("input.conf changed by bad input: %q", data)
			}
			if _, err := os.Stat(filepath.Join(p.configDir, "main.conf")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("main.conf written despite bad input: %v", err)
			}
			if _, err := os.Stat(filepath.Dir(p.socketPath)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("bus directory created despite bad input: %v", err)
			}
		})
	}
}

// A socket path whose directory cannot be made or written (under /proc or
// /sys, say) fails before any configuration is written: bad input changes
// nothing.
func TestUnusableSocketDirectory(t *testing.T) {
	for _, socket := range []string{"/proc/nonexistent/sock", "/sys/liken-bluetoothd-test/sock", "/proc/self/sock"} {
		t.Run(socket, func(t *testing.T) {
			p := newPod(t)
			cmd := exec.Command(entrypoint, "-config-dir", p.configDir)
			cmd.Env = append(os.Environ(), EnvBusAddress+"=unix:path="+socket)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("exit: %v, want status 1; output:\n%s", err, out)
			}
			if !strings.Contains(string(out), "bluetoothd entrypoint: "+EnvBusAddress+": ") || !strings.Contains(string(out), filepath.Dir(socket)) {
				t.Errorf("output %q does not name the variable and the directory %s", out, filepath.Dir(socket))
			}
			if _, err := os.Stat(p.configDir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("configuration written although the bus cannot listen at %s: %v", socket, err)
			}
		})
	}
}

// A file that is not a socket where the bus must listen is not replaced,
// and a missing bluetoothd is found before the bus starts.
func TestEnvironmentFailures(t *testing.T) {
	t.Run("file in the way", func(t *testing.T) {
		p := newPod(t)
		if err := os.MkdirAll(filepath.Dir(p.socketPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p.socketPath, []byte("not a socket"), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(entrypoint, "-config-dir", p.configDir)
		cmd.Env = append(os.Environ(), EnvBusAddress+"="+p.address)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), p.socketPath+" is a regular file, not a socket; not replacing it") {
			t.Fatalf("%v:\n%s", err, out)
		}
		if data, _ := os.ReadFile(p.socketPath); string(data) != "not a socket" {
			t.Errorf("file in the way changed: %q", data)
		}
	})
	t.Run("no bluetoothd", func(t *testing.T) {
		p := newPod(t)
		cmd := exec.Command(entrypoint, "-config-dir", p.configDir, "-bluetoothd", filepath.Join(p.dir, "absent"))
		cmd.Env = append(os.Environ(), EnvBusAddress+"="+p.address)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "bluetoothd: stat "+filepath.Join(p.dir, "absent")) {
			t.Fatalf("%v:\n%s", err, out)
		}
		if _, err := os.Stat(filepath.Dir(p.socketPath)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("bus directory created although bluetoothd is missing: %v", err)
		}
	})
	t.Run("stray argument", func(t *testing.T) {
		out, err := exec.Command(entrypoint, "extra").CombinedOutput()
		if err == nil || !strings.Contains(string(out), `unexpected arguments ["extra"]`) {
			t.Fatalf("%v:\n%s", err, out)
		}
	})
}

func TestParseClassicBondedOnly(t *testing.T) {
	for v, want := range map[string]bool{"": true, "true": true, "false": false} {
		got, err := parseClassicBondedOnly(v)
		if err != nil || got != want {
			t.Errorf("parseClassicBondedOnly(%q) = %v, %v", v, got, err)
		}
	}
	for _, v := range []string{"yes", "no", "1", "0", "True", "FALSE", " true", "on"} {
		if _, err := parseClassicBondedOnly(v); err == nil {
			t.Errorf("parseClassicBondedOnly(%q) accepted it", v)
		}
	}
}

func TestSetenvReplaces(t *testing.T) {
	got := setenv([]string{"A=1", "DBUS_SYSTEM_BUS_ADDRESS=old", "DBUS_SYSTEM_BUS_ADDRESSX=keep", "DBUS_SYSTEM_BUS_ADDRESS=older"}, EnvBusAddress, "new")
	want := []string{"A=1", "DBUS_SYSTEM_BUS_ADDRESSX=keep", "DBUS_SYSTEM_BUS_ADDRESS=new"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("setenv = %q, want %q", got, want)
	}
}
