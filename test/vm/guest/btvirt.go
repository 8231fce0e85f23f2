// SPDX-License-Identifier: Apache-2.0

package guest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/liken-sh/operators/internal/supervise"
)

// BluetoothModules are what btvirt needs: hci_vhci for its controllers
// (and through it the Bluetooth core), and the kernel crypto user API
// (AF_ALG sockets for ecb(aes) and cmac(aes)) its emulated controllers do
// their pairing crypto with. Without udev nothing loads the crypto modules
// on demand, and btvirt fails with "Failed to open Virtual HCI device".
var BluetoothModules = []string{"hci_vhci", "af_alg", "algif_hash", "algif_skcipher", "cmac", "aesni-intel"}

// Btvirt is a running btvirt (package bluez-test-tools): emulated
// controllers, registered with the kernel through /dev/vhci, that can see
// and connect to each other.
type Btvirt struct {
	cmd   *exec.Cmd
	bound *supervise.Bound
	out   bytes.Buffer // read only once bound is done
	// Controllers are the new controllers' ids (the N of hciN), ascending.
	Controllers []uint16
}

// StartBtvirt loads BluetoothModules, starts btvirt with n BR/EDR+LE
// controllers, and waits until the kernel has set every one of them up:
// registered in /sys/class/bluetooth (10 s at most), then known to the
// management interface (20 s at most), which adds a controller's index
// only once its HCI initialisation has succeeded
// (net/bluetooth/hci_core.c, hci_power_on). A controller whose
// initialisation failed (btvirt answering HCI Reset late on a loaded host:
// the kernel logs "Opcode 0x0c03 failed: -110") is never added, and stays
// dead as a USB dongle that failed to come up does until it is plugged
// again; so btvirt is then stopped and started again, three times at
// most.
func StartBtvirt(n int) (*Btvirt, error) {
	if err := Modprobe(BluetoothModules...); err != nil {
		return nil, err
	}
	var errs []error
	for attempt := 1; attempt <= 3; attempt++ {
		b, err := startBtvirt(n)
		if err == nil {
			return b, nil
		}
		errs = append(errs, fmt.Errorf("attempt %d: %w", attempt, err))
	}
	return nil, errors.Join(errs...)
}

// startBtvirt is one attempt of StartBtvirt; on error nothing is left
// running.
func startBtvirt(n int) (*Btvirt, error) {
	before := controllers()
	b := &Btvirt{cmd: exec.Command("btvirt", "-l"+strconv.Itoa(n))}
	b.cmd.Stdout, b.cmd.Stderr = &b.out, &b.out
	// Bound to this test binary's life on a thread of its own: forked
	// from this goroutine's thread, btvirt would be killed (and its
	// controllers removed) whenever that thread was later retired, as
	// every thread a daemon of the test was forked on is when the daemon
	// is reaped.
	var err error
	if b.bound, err = supervise.StartBound(b.cmd); err != nil {
		return nil, err
	}
	ok := WaitFor(10*time.Second, func() bool {
		b.Controllers = nil
		for _, id := range controllers() {
			if !slices.Contains(before, id) {
				b.Controllers = append(b.Controllers, id)
			}
		}
		return len(b.Controllers) == n
	})
	if !ok {
		b.Stop()
		return nil, fmt.Errorf("btvirt -l%d: %d new controllers after 10 s (%v); its output:\n%s", n, len(b.Controllers), b.Controllers, b.out.String())
	}
	var unknown []uint16
	if !WaitFor(20*time.Second, func() bool {
		unknown = slices.DeleteFunc(slices.Clone(b.Controllers), func(id uint16) bool {
			_, err := mgmtAddress(id)
			return err == nil
		})
		return len(unknown) == 0
	}) {
		b.Stop()
		return nil, fmt.Errorf("btvirt -l%d: the management interface does not know controllers %v of %v after 20 s (their HCI initialisation failed; see the kernel log)", n, unknown, b.Controllers)
	}
	return b, nil
}

// Stop ends btvirt, which unregisters its controllers, and waits up to
// 30 s until they are gone.
func (b *Btvirt) Stop() error {
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.bound.Done(): // a btvirt stopped on purpose exits by the signal
	case <-time.After(30 * time.Second):
		b.cmd.Process.Kill()
		<-b.bound.Done()
	}
	if !WaitFor(30*time.Second, func() bool {
		for _, id := range controllers() {
			if slices.Contains(b.Controllers, id) {
				return false
			}
		}
		return true
	}) {
		return fmt.Errorf("btvirt's controllers %v are still registered after it stopped", b.Controllers)
	}
	return nil
}

// controllers lists the registered hciN ids.
func controllers() []uint16 {
	var ids []uint16
	for _, p := range Glob("/sys/class/bluetooth/hci*") {
		name := filepath.Base(p)
		if strings.Contains(name, ":") { // hci0:256 is a connection
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimPrefix(name, "hci"), 10, 16); err == nil {
			ids = append(ids, uint16(n))
		}
	}
	slices.Sort(ids)
	return ids
}

// MgmtAddress reads a controller's address with btmgmt, BlueZ's client of
// the kernel's management interface: a second reading, by another
// interface than HCIGETDEVINFO, to check that one against.
func MgmtAddress(id uint16) (string, error) {
	// The controller shows in /sys/class/bluetooth a moment before the
	// management interface knows its index (btmgmt then answers status
	// 0x11, Invalid Index; seen once in the VM right after a btvirt had
	// given the same index up), so a few tries are allowed.
	var addr string
	var last error
	WaitFor(5*time.Second, func() bool {
		addr, last = mgmtAddress(id)
		return last == nil
	})
	if last != nil {
		return "", last
	}
	return addr, nil
}

// mgmtAddress is one reading of MgmtAddress.
func mgmtAddress(id uint16) (string, error) {
	out, err := Mgmt(id, "info")
	if err != nil {
		return "", err
	}
	for _, f := range strings.Split(out, "\n") {
		fields := strings.Fields(f)
		if len(fields) >= 2 && fields[0] == "addr" {
			return strings.ToUpper(fields[1]), nil
		}
	}
	return "", fmt.Errorf("btmgmt --index %d info printed no address:\n%s", id, out)
}

// Mgmt runs one btmgmt command on controller id and returns its output.
func Mgmt(id uint16, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args = append([]string{"--index", strconv.Itoa(int(id))}, args...)
	cmd := exec.CommandContext(ctx, "btmgmt", args...)
	// btmgmt quits as soon as its standard input ends, before the
	// kernel's answer arrives; an open pipe keeps it until it is done.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	defer stdin.Close()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("btmgmt %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
