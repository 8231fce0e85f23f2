// SPDX-License-Identifier: Apache-2.0

package vm

import (
	"bytes"
	"fmt"
	"strings"
)

// Guest is one package whose vmtier tests run in the guest: its test
// binary is /tests/<Name>.test there and leaves <Name>.log and <Name>.rc
// in the results share. Only tests named TestVM* run.
type Guest struct {
	// Name is the package's last path element.
	Name string
	// Package is the package's directory relative to the module root.
	Package string
}

// Guests run in this order in one boot. Each test loads the modules it
// needs itself, so a test that watches a module load sees it happen.
//
// To add one: a _test.go file with the vmtier build tag and TestVM*
// tests in the package under test (helpers in package guest), an entry
// here, and any module, host program or file it needs in Modules,
// Programs or Files below.
var Guests = []Guest{
	{"alsa", "./internal/alsa"},             // the control interface's ioctls on three real cards
	{"audio", "./internal/audio"},           // declare against those cards' /dev/snd; a held PCM's node made once it is free
	{"mixer", "./internal/mixer"},           // mixer controls read, attached and written on those cards
	{"uevent", "./internal/uevent"},         // the listener on a module load and on a uhid device
	{"hid", "./internal/hid"},               // discovery of a uhid Bluetooth gamepad
	{"uinput", "./internal/uinput"},         // what evdev's Validate refuses is what uinput refuses
	{"inputrelay", "./internal/inputrelay"}, // a consumer reading a uhid pad through its naps, and its rumble
	{"relayd", "./internal/relayd"},         // the relay daemon's claims through naps and its own restart
	{"bluetooth", "./internal/bluetooth"},   // prepare in relay and direct mode against the real relay
	{"hci", "./internal/hci"},               // HCIGETDEVINFO on btvirt's controllers
	{"bluez", "./test/vm/bluez"},            // the bluetoothd entrypoint, pairing, bonds, the PS button after a restart
	// the liken.sh inventory driver's discovery over the three cards, a
	// card's uevents, btvirt's controllers; last, since it unloads and
	// reloads snd-aloop
	{"inventory", "./internal/inventory"},
}

// Modules are the kernel modules staged in the initramfs (with their
// dependencies). 9p and 9pnet_virtio carry the results share; the rest are
// what the guest tests load.
var Modules = []string{
	"9p", "9pnet_virtio",
	"snd-dummy", "snd-aloop", "snd-hda-intel", "snd-hda-codec-generic",
	"uhid", "hid-generic", "evdev", "uinput", "dummy",
	"hci_vhci", "hidp", "af_alg", "algif_hash", "algif_skcipher", "cmac", "ecb", "aesni-intel",
}

// Programs are the host programs (with their libraries) the guest tests
// run: btvirt and btmgmt (bluez-test-tools, bluez), setpriv (util-linux,
// to run a process with a pod's capabilities), what the bluetoothd
// entrypoint starts, and PipeWire, WirePlumber, pw-dump and pw-play
// (pw-cat under the name that makes it play), which the speaker tests run
// against the real bluetoothd.
var Programs = []string{
	"/usr/bin/btvirt", "/usr/bin/btmgmt", "/usr/bin/setpriv",
	"/usr/bin/dbus-daemon", "/usr/libexec/bluetooth/bluetoothd",
	"/usr/bin/pipewire", "/usr/bin/wireplumber", "/usr/bin/pw-dump", "/usr/bin/pw-play",
}

// Libraries are shell globs of the shared objects PipeWire and WirePlumber
// load at run time (dlopen, so ldd of the programs does not list them),
// staged like Programs with what each links: the modules pipewire.conf
// loads, the SPA plugins the pod's graph uses (support, audioconvert,
// audiomixer, control, alsa for the cards' PCMs, the bluez5 plugin and
// its codecs) and every
// WirePlumber module. The rest of PipeWire's modules (JACK, RAOP, ROC,
// X11 ...) would pull in tens of megabytes of libraries nothing here
// uses.
var Libraries = []string{
	"/usr/lib/x86_64-linux-gnu/pipewire-0.3/libpipewire-module-{rt,protocol-native,profiler,metadata,spa-device-factory,spa-node-factory,client-node,client-device,portal,access,adapter,link-factory,session-manager,spa-device,spa-node}.so",
	"/usr/lib/x86_64-linux-gnu/spa-0.2/{support,audioconvert,audiomixer,control,alsa,bluez5}/*.so",
	"/usr/lib/x86_64-linux-gnu/wireplumber-0.5/*.so",
}

// Trees are host directories copied whole to the same path: PipeWire's and
// WirePlumber's configuration and WirePlumber's Lua scripts, the bluez5
// plugin's hardware quirks, and alsa-lib's configuration (alsa.conf
// defines the hw: PCMs PipeWire's alsa plugin opens).
var Trees = []string{"/usr/share/pipewire", "/usr/share/wireplumber", "/usr/share/spa-0.2", "/usr/share/alsa"}

// Files are host files copied to the same path: the system bus's
// configuration and BlueZ's policy in it, which the entrypoint's
// dbus-daemon --system reads.
var Files = []string{
	"/usr/share/dbus-1/system.conf",
	"/etc/dbus-1/system.d/bluetooth.conf",
}

// Written are files made for the guest: the users dbus-daemon and
// bluetoothd look up (the system bus drops to messagebus), and the
// machine id libdbus wants.
var Written = map[string]string{
	"/etc/passwd":     "root:x:0:0:root:/root:/bin/sh\nmessagebus:x:100:102::/nonexistent:/bin/false\n",
	"/etc/group":      "root:x:0:\nmessagebus:x:102:\n",
	"/etc/machine-id": "6c696b656e766d746573747469657200\n",
}

// GuestTestTimeout bounds each guest test binary (-test.timeout), so a
// hung test ends with its goroutines' stacks in its log rather than with
// the whole boot's timeout. The bluez binary is the longest: its three
// tests took 320 s under TCG on a loaded two-core host.
const GuestTestTimeout = "480s"

// GuestUpLine starts the first line the guest's /init prints on the
// console, once the kernel has booted and the results share is mounted.
const GuestUpLine = "vm-test: guest up at"

// PanickedBeforeInit reports whether console (a boot's serial console)
// shows a kernel panic before /init printed GuestUpLine: the emulated
// boot itself failed and no guest test ran. Under TCG this happens now
// and then at the same early point of an otherwise good boot (a double
// fault in apparmor_init's allocations, once in some tens of boots on a
// loaded host), so such a boot is worth repeating; a panic after /init
// started is a finding of the tests and is not.
func PanickedBeforeInit(console []byte) bool {
	panicAt := bytes.Index(console, []byte("Kernel panic - not syncing"))
	if panicAt < 0 {
		return false
	}
	up := bytes.Index(console, []byte(GuestUpLine))
	return up < 0 || up > panicAt
}

// InitScript is the guest's /init: mount the kernel's filesystems, name
// busybox's modprobe as the kernel's module loader, mount the results
// share, run each guest's test binary, and power off. Progress lines on
// the console start with "vm-test:".
func InitScript(names []string) string {
	var b strings.Builder
	b.WriteString(`#!/bin/sh
# /init of the VM test tier, written by package vm.
export PATH=/usr/local/bin:/usr/bin:/usr/sbin:/bin:/sbin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mkdir -p /var/run /var/lib/bluetooth
# request_module() (e.g. the HDA codec driver) runs this.
echo /sbin/modprobe > /proc/sys/kernel/modprobe
up() { cut -d' ' -f1 /proc/uptime; }
if ! { modprobe 9pnet_virtio && modprobe 9p && mount -t 9p -o trans=virtio,version=9p2000.L ` + ShareTag + ` /out; }; then
	echo "vm-test: cannot mount the results share"
	poweroff -f
fi
echo "` + GuestUpLine + ` $(up) s"
`)
	fmt.Fprintf(&b, "for t in %s; do\n", strings.Join(names, " "))
	fmt.Fprintf(&b, `	echo "vm-test: $t starts at $(up) s"
	/tests/$t.test -test.v -test.run '^TestVM' -test.timeout %s >/out/$t.log 2>&1
	rc=$?
	echo $rc >/out/$t.rc
	echo "vm-test: $t exited $rc at $(up) s"
done
sync
poweroff -f
`, GuestTestTimeout)
	return b.String()
}
