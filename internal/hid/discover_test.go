// SPDX-License-Identifier: Apache-2.0

package hid

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sharedFixtures is the repository's copy of the recorded fixtures.
const sharedFixtures = "../../testdata/fixtures"

// evdev is /dev/input/eventN with the number evdev gives it when no
// dynamic minor is needed (EVDEV_MINOR_BASE 64 in drivers/input/evdev.c).
func evdev(n uint32) Node {
	return Node{Path: fmt.Sprintf("/dev/input/event%d", n), Major: InputMajor, Minor: 64 + n}
}

var recordedTree = []Device{
	{
		Address: "6C:93:08:62:72:16", Adapter: "60:E9:AA:A0:4F:2C", Name: `"Keychron K1 Pro"`,
		Vendor: 0x3434, Product: 0x0213, SysName: "0005:3434:0213.000A",
		DevPath: "/devices/virtual/misc/uhid/0005:3434:0213.000A",
		Nodes:   []Node{evdev(18)},
	},
	{
		Address: "C8:3F:26:10:20:30", Adapter: "80:19:34:4D:31:44", Name: "BluetoothMouse3600",
		Vendor: 0x045E, Product: 0x0916, SysName: "0005:045E:0916.0004",
		DevPath: "/devices/virtual/misc/uhid/0005:045E:0916.0004",
		Nodes:   []Node{evdev(4), evdev(6)},
	},
	{
		Address: "E4:17:D8:C5:67:6D", Adapter: "00:1A:7D:DA:71:13", Name: "8Bitdo NES30 Pro",
		Vendor: 0x2DC8, Product: 0x3820, SysName: "0005:2DC8:3820.0006",
		DevPath: "/devices/pci0000:00/0000:00:14.0/usb1/1-7/1-7:1.0/bluetooth/hci0/hci0:256/0005:2DC8:3820.0006",
		Nodes:   []Node{evdev(5)},
	},
	{
		Address: "F0:5C:77:E1:02:03", Adapter: "B8:27:EB:30:06:FB", Name: "ortho remote",
		Vendor: 0x0450, Product: 0x0004, SysName: "0005:0450:0004.0001",
		DevPath: "/devices/virtual/misc/uhid/0005:0450:0004.0001",
	},
}

// TestDiscoverRecordedTree: four Bluetooth devices found whatever their
// parent (uhid or hci0), the USB keyboard ignored, js0, mouse0 and hidraw
// nodes never returned, a device without a bound driver listed with no node.
func TestDiscoverRecordedTree(t *testing.T) {
	root := materialize(t, "testdata/sysfs.dump")
	scan, err := Discover(root, "/dev")
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.Skipped) != 0 {
		t.Errorf("Skipped = %v, want none", scan.Skipped)
	}
	if diff := cmp.Diff(scan.Devices, recordedTree); diff != "" {
		t.Errorf("Devices (-scan.Devices +recordedTree):\n%s", diff)
	}
	// Another /dev root moves the node paths with it.
	scan, err = Discover(root, "/host/dev")
	if err != nil {
		t.Fatal(err)
	}
	if got := scan.EventNodes("E4:17:D8:C5:67:6D", ""); !reflect.DeepEqual(got, []string{"/host/dev/input/event5"}) {
		t.Errorf("nodes under /host/dev = %v", got)
	}
}

// TestRecordedTreeAgreesWithFixtures checks the made-up tree against the
// shared fixtures it was built from, so that the tree cannot drift from the
// recorded facts: the Keychron's /proc/bus/input/devices block and the
// hid-generic lines of the uhid dmesg captures.
func TestRecordedTreeAgreesWithFixtures(t *testing.T) {
	root := materialize(t, "testdata/sysfs.dump")
	scan, err := Discover(root, "/dev")
	if err != nil {
		t.Fatal(err)
	}
	bySysName := map[string]Device{}
	for _, d := range scan.Devices {
		bySysName[d.SysName] = d
	}

	proc, err := os.ReadFile(filepath.Join(sharedFixtures, "hid/keychron-k1pro-bt-proc-bus-input-devices-nested-quotes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	field := func(prefix string) string {
		for _, line := range strings.Split(string(proc), "\n") {
			if v, ok := strings.CutPrefix(line, prefix); ok {
				return strings.TrimSpace(v)
			}
		}
		t.Fatalf("fixture has no %q line", prefix)
		return ""
	}
	sysfs := field("S: Sysfs=")                  // .../0005:3434:0213.000A/input/input46
	hidPath := filepath.Dir(filepath.Dir(sysfs)) // the HID device
	d, ok := bySysName[filepath.Base(hidPath)]
	if !ok {
		t.Fatalf("no device %s found", filepath.Base(hidPath))
	}
	if d.DevPath != hidPath {
		t.Errorf("DevPath %s, fixture %s", d.DevPath, hidPath)
	}
	if want := strings.ToUpper(field("U: Uniq=")); d.Address != want {
		t.Errorf("Address %s, fixture Uniq %s", d.Address, want)
	}
	if want := strings.ToUpper(field("P: Phys=")); d.Adapter != want {
		t.Errorf("Adapter %s, fixture Phys %s", d.Adapter, want)
	}
	var handlers []string
	for _, h := range strings.Fields(field("H: Handlers=")) {
		if strings.HasPrefix(h, "event") {
			handlers = append(handlers, "/dev/input/"+h)
		}
	}
	if diff := cmp.Diff(scan.EventNodes(d.Address, ""), handlers); diff != "" {
		t.Errorf("EventNodes (-scan.EventNodes +handlers):\n%s", diff)
	}

	dmesg, err := os.ReadFile(filepath.Join(sharedFixtures, "uevent/dmesg-bt-hid-uhid-lines.txt"))
	if err != nil {
		t.Fatal(err)
	}
	hidLine := regexp.MustCompile(`hid-generic (0005:[0-9A-F:.]+): .* on ([0-9A-F:]{17})$`)
	inputLine := regexp.MustCompile(`input: .* as (/devices/\S+)/input/input\d+$`)
	checked := 0
	for _, line := range strings.Split(string(dmesg), "\n") {
		if m := hidLine.FindStringSubmatch(line); m != nil {
			d, ok := bySysName[m[1]]
			if !ok {
				continue // (b) is only in the uevent sequences
			}
			checked++
			if d.Adapter != m[2] {
				t.Errorf("%s: Adapter %s, dmesg says on %s", m[1], d.Adapter, m[2])
			}
		}
		if m := inputLine.FindStringSubmatch(line); m != nil {
			if d, ok := bySysName[filepath.Base(m[1])]; ok && d.DevPath != m[1] {
				t.Errorf("%s: DevPath %s, dmesg says %s", d.SysName, d.DevPath, m[1])
			}
		}
	}
	if checked != 2 {
		t.Errorf("checked %d dmesg devices against the tree, want 2", checked)
	}
}

// TestEventNodesOnRecordedSysfs runs the node finder on the real recorded
// input device of the shared sysfs dump: event11 counts, js0 does not.
func TestEventNodesOnRecordedSysfs(t *testing.T) {
	root := materialize(t, filepath.Join(sharedFixtures, "uevent/sysfs-grep-dump-snd_aloop-and-lis3lv02d-excerpt.txt"))
	nodes, problems := eventNodes(filepath.Join(root, "devices/platform/lis3lv02d"), "/dev")
	if len(problems) != 0 {
		t.Errorf("problems: %v", problems)
	}
	if !reflect.DeepEqual(nodes, []Node{evdev(11)}) {
		t.Errorf("nodes = %v, want [/dev/input/event11 (c 13:75)]", nodes)
	}
	// The recorded empty uevent file of a sound card parses as no variables.
	data, err := os.ReadFile(filepath.Join(root, "devices/platform/snd_aloop.0/sound/card2/uevent"))
	if err != nil {
		t.Fatal(err)
	}
	if vars, err := parseVars(data); err != nil || len(vars) != 0 {
		t.Errorf("empty uevent = %v, %v", vars, err)
	}
}

// writeTree lays out files (path relative to the sysfs root -> content) and
// symlinks (path -> target) under a new sysfs root.
func writeTree(t *testing.T, files, links map[string]string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "sys")
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for p, target := range links {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "bus/hid/devices"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

const goodUevent = "HID_ID=0005:0000054C:00000CE6\nHID_NAME=Wireless Controller\nHID_PHYS=aa:bb:cc:dd:ee:01\nHID_UNIQ=a0:5a:5d:00:00:01\n"

// TestDiscoverSkipsMalformed: each bad entry is left out with an error that
// names its path and what was wrong, and the good entry beside it is found.
func TestDiscoverSkipsMalformed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		uevent  string // of the bad device; "-" for no uevent file
		sysName string // bus name of the bad device
		want    string
	}{
		{"empty uniq", "HID_ID=0005:00000001:00000002\nHID_UNIQ=\n", "", `HID_UNIQ: "" is not a Bluetooth address`},
		{"no uniq", "HID_ID=0005:00000001:00000002\n", "", `HID_UNIQ: "" is not a Bluetooth address`},
		{"uniq not address", "HID_ID=0005:00000001:00000002\nHID_UNIQ=a0-5a-5d-00-00-02\n", "", "want ':' at offset 2"},
		{"uniq not hex", "HID_ID=0005:00000001:00000002\nHID_UNIQ=g0:5a:5d:00:00:02\n", "", "is not hex"},
		{"bus disagrees", "HID_ID=0003:00000001:00000002\nHID_UNIQ=a0:5a:5d:00:00:02\n", "", "HID_ID bus 0003 disagrees"},
		{"no HID_ID", "HID_UNIQ=a0:5a:5d:00:00:02\n", "", "no HID_ID"},
		{"bad HID_ID", "HID_ID=0005:1:2\nHID_UNIQ=a0:5a:5d:00:00:02\n", "", "is not BBBB:VVVVVVVV:PPPPPPPP"},
		{"line without equals", "HID_ID=0005:00000001:00000002\nHID_NAME=Pad\nsecond line\nHID_UNIQ=a0:5a:5d:00:00:02\n", "", `line 3 "second line" has no '='`},
		{"forged uniq", "HID_ID=0005:00000001:00000002\nHID_NAME=Pad\nHID_UNIQ=11:11:11:11:11:11\nHID_UNIQ=a0:5a:5d:00:00:02\n", "", "line 4 repeats key HID_UNIQ"},
		{"empty line", "HID_ID=0005:00000001:00000002\n\nHID_UNIQ=a0:5a:5d:00:00:02\n", "", "line 2 is empty"},
		{"oversized", "HID_ID=0005:00000001:00000002\nHID_NAME=" + strings.Repeat("x", 5000) + "\n", "", "over 4096 bytes"},
		{"no uevent", "-", "", "no such file"},
		{"not a bus name", goodUevent, "0005:junk", "not a HID bus name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sysName := tc.sysName
			if sysName == "" {
				sysName = "0005:0001:0002.0009"
			}
			files := map[string]string{
				"devices/virtual/misc/uhid/0005:054C:0CE6.0001/uevent":                     goodUevent,
				"devices/virtual/misc/uhid/0005:054C:0CE6.0001/input/input1/event2/uevent": "MAJOR=13\nMINOR=66\nDEVNAME=input/event2\n",
				"devices/virtual/misc/uhid/" + sysName + "/input/input9/uevent":            "NAME=\"x\"\n",
				"devices/virtual/misc/uhid/0005:054C:0CE6.0001/input/input1/event2/dev":    "13:66\n",
			}
			if tc.uevent != "-" {
				files["devices/virtual/misc/uhid/"+sysName+"/uevent"] = tc.uevent
			}
			root := writeTree(t, files, map[string]string{
				"bus/hid/devices/0005:054C:0CE6.0001": "../../../devices/virtual/misc/uhid/0005:054C:0CE6.0001",
				"bus/hid/devices/" + sysName:          "../../../devices/virtual/misc/uhid/" + sysName,
			})
			scan, err := Discover(root, "/dev")
			if err != nil {
				t.Fatal(err)
			}
			if len(scan.Devices) != 1 || scan.Devices[0].Address != "A0:5A:5D:00:00:01" ||
				!reflect.DeepEqual(scan.Devices[0].Nodes, []Node{evdev(2)}) {
				t.Errorf("Devices = %+v, want only the good one with event2", scan.Devices)
			}
			if len(scan.Skipped) != 1 {
				t.Fatalf("Skipped = %v, want one", scan.Skipped)
			}
			msg := scan.Skipped[0].Error()
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, sysName) {
				t.Errorf("skip reason %q does not name %s and %q", msg, sysName, tc.want)
			}
			var ee *EntryError
			if !errors.As(scan.Skipped[0], &ee) {
				t.Errorf("skip reason is %T, not *EntryError", scan.Skipped[0])
			}
		})
	}
}

// TestDiscoverBadNodes: an eventN directory whose DEVNAME is not an evdev
// name, or whose number is missing or not an evdev number (a disk's 8:0),
// is left out, reported, and the device is kept with its other nodes.
func TestDiscoverBadNodes(t *testing.T) {
	dev := "devices/virtual/misc/uhid/0005:054C:0CE6.0001/"
	root := writeTree(t, map[string]string{
		dev + "uevent":                       goodUevent,
		dev + "input/input1/event2/uevent":   "MAJOR=13\nMINOR=66\nDEVNAME=input/event2\n",
		dev + "input/input1/event3/uevent":   "MAJOR=13\nMINOR=67\nDEVNAME=../../etc/passwd\n",
		dev + "input/input1/event4/uevent":   "MAJOR=13\nMINOR=68\n",
		dev + "input/input1/event5/uevent":   "MAJOR=8\nMINOR=0\nDEVNAME=input/event5\n",
		dev + "input/input1/event6/uevent":   "MAJOR=13\nDEVNAME=input/event6\n",
		dev + "input/input3/event8/uevent":   "MAJOR=13\nMINOR=1024\nDEVNAME=input/event8\n",
		dev + "input/input3/event9/uevent":   "MAJOR=13\nMINOR=-1\nDEVNAME=input/event9\n",
		dev + "input/input2/event7/uevent":   "MAJOR=13\nMINOR=71\nDEVNAME=input/event7\n",
		dev + "input/input2/js1/uevent":      "MAJOR=13\nMINOR=1\nDEVNAME=input/js1\n",
		dev + "input/notinput/event9/uevent": "DEVNAME=input/event9\n",
	}, map[string]string{
		"bus/hid/devices/0005:054C:0CE6.0001": "../../../" + strings.TrimSuffix(dev, "/"),
	})
	scan, err := Discover(root, "/dev")
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.Devices) != 1 || !reflect.DeepEqual(scan.Devices[0].Nodes, []Node{evdev(2), evdev(7)}) {
		t.Fatalf("Devices = %+v", scan.Devices)
	}
	want := []string{
		`event3/uevent: DEVNAME "../../etc/passwd" is not input/eventN`,
		`event4/uevent: DEVNAME "" is not input/eventN`,
		`event5/uevent: input/event5 is char 8:0, not an evdev number (major 13, minor below 1024)`,
		`event6/uevent: uevent has no MINOR`,
		`event8/uevent: input/event8 is char 13:1024, not an evdev number`,
		`event9/uevent: MINOR "-1" is not a decimal below 1048576`,
	}
	if len(scan.Skipped) != len(want) {
		t.Fatalf("Skipped = %v, want %d", scan.Skipped, len(want))
	}
	for i, want := range want {
		if !strings.Contains(scan.Skipped[i].Error(), want) {
			t.Errorf("Skipped[%d] = %q, want %q", i, scan.Skipped[i], want)
		}
	}
}

// TestDiscoverLinkOutsideRoot: a bus entry that resolves outside the sysfs
// root is refused rather than read.
func TestDiscoverLinkOutsideRoot(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "uevent"), []byte(goodUevent), 0o644); err != nil {
		t.Fatal(err)
	}
	root := writeTree(t, nil, map[string]string{"bus/hid/devices/0005:054C:0CE6.0001": outside})
	scan, err := Discover(root, "/dev")
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.Devices) != 0 || len(scan.Skipped) != 1 || !strings.Contains(scan.Skipped[0].Error(), "outside the sysfs root") {
		t.Errorf("scan = %+v", scan)
	}
}

func TestDiscoverRoots(t *testing.T) {
	// A sysfs with no HID bus (hid not loaded) is an empty scan.
	root := filepath.Join(t.TempDir(), "sys")
	if err := os.MkdirAll(filepath.Join(root, "bus", "usb"), 0o755); err != nil {
		t.Fatal(err)
	}
	scan, err := Discover(root, "/dev")
	if err != nil || len(scan.Devices) != 0 || len(scan.Skipped) != 0 {
		t.Errorf("no HID bus: %+v, %v", scan, err)
	}
	// A directory that is not a sysfs is an error.
	if _, err := Discover(t.TempDir(), "/dev"); err == nil || !strings.Contains(err.Error(), "is not a sysfs root") {
		t.Errorf("not a sysfs: err = %v", err)
	}
}

func TestScanEventNodes(t *testing.T) {
	scan := Scan{Devices: []Device{
		{Address: "A0:5A:5D:00:00:01", Adapter: "AA:BB:CC:DD:EE:01", Nodes: []Node{evdev(7), evdev(2)}},
		// The same pad listed twice for a moment after a quick reconnect.
		{Address: "A0:5A:5D:00:00:01", Adapter: "AA:BB:CC:DD:EE:01", Nodes: []Node{evdev(2), evdev(9)}},
		{Address: "A0:5A:5D:00:00:01", Nodes: []Node{evdev(11)}}, // adapter unknown
		{Address: "A0:5A:5D:00:00:01", Adapter: "AA:BB:CC:DD:EE:02", Nodes: []Node{evdev(12)}},
		{Address: "A0:5A:5D:00:00:03"},
	}}
	if got, want := scan.EventNodes("A0:5A:5D:00:00:01", "AA:BB:CC:DD:EE:01"),
		[]string{"/dev/input/event11", "/dev/input/event2", "/dev/input/event7", "/dev/input/event9"}; !reflect.DeepEqual(got, want) {
		t.Errorf("adapter 01: %v, want %v", got, want)
	}
	if got := scan.EventNodes("A0:5A:5D:00:00:01", ""); len(got) != 5 {
		t.Errorf("any adapter: %v, want 5 nodes", got)
	}
	if got, want := scan.Nodes("A0:5A:5D:00:00:01", "AA:BB:CC:DD:EE:01"), []Node{evdev(11), evdev(2), evdev(7), evdev(9)}; !reflect.DeepEqual(got, want) {
		t.Errorf("adapter 01 with numbers: %v, want %v", got, want)
	}
	if got := scan.EventNodes("A0:5A:5D:00:00:03", ""); got != nil {
		t.Errorf("device without nodes: %v, want nil", got)
	}
	if got := scan.EventNodes("A0:5A:5D:00:00:09", ""); got != nil {
		t.Errorf("unknown device: %v, want nil", got)
	}
}

// TestDiscoverRealSysfs reads this machine's own /sys: it must be a readable
// sysfs root, and whatever Bluetooth HID devices it lists (none on a build
// machine; the uhid device of the VM tier there) must exist where DevPath
// says.
func TestDiscoverRealSysfs(t *testing.T) {
	scan, err := Discover(DefaultSysRoot, DefaultDevRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range scan.Devices {
		if _, err := os.Stat(filepath.Join(DefaultSysRoot, d.DevPath, "uevent")); err != nil {
			t.Errorf("%s: %v", d.SysName, err)
		}
	}
	t.Logf("%d Bluetooth HID devices, %d skipped: %+v", len(scan.Devices), len(scan.Skipped), scan)
}

func BenchmarkDiscoverRecordedTree(b *testing.B) {
	root := materialize(b, "testdata/sysfs.dump")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Discover(root, "/dev"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDiscoverRefusesNamedPipes: a named pipe where a uevent file belongs
// (a device's or an event node's) is reported and never opened; opening
// one for reading would wait for a writer, and every pass with it.
func TestDiscoverRefusesNamedPipes(t *testing.T) {
	good := "devices/virtual/misc/uhid/0005:054C:0CE6.0001/"
	piped := "devices/virtual/misc/uhid/0005:0001:0002.0009/"
	root := writeTree(t, map[string]string{
		good + "uevent":                     goodUevent,
		good + "input/input1/event2/dev":    "13:66\n",
		good + "input/input1/event5/dev":    "13:69\n",
		good + "input/input1/event5/uevent": "MAJOR=13\nMINOR=69\nDEVNAME=input/event5\n",
		piped + "input/input9/event9/dev":   "13:73\n",
	}, map[string]string{
		"bus/hid/devices/0005:054C:0CE6.0001": "../../../" + strings.TrimSuffix(good, "/"),
		"bus/hid/devices/0005:0001:0002.0009": "../../../" + strings.TrimSuffix(piped, "/"),
	})
	for _, p := range []string{good + "input/input1/event2/uevent", piped + "uevent"} {
		if err := syscall.Mkfifo(filepath.Join(root, p), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		scan Scan
		err  error
	}
	done := make(chan result, 1)
	go func() {
		scan, err := Discover(root, "/dev")
		done <- result{scan, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Discover is still waiting on a named pipe after 30 s")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.scan.Devices) != 1 || !reflect.DeepEqual(r.scan.Devices[0].Nodes, []Node{evdev(5)}) {
		t.Errorf("Devices = %+v, want the good one with event5 only", r.scan.Devices)
	}
	all := errors.Join(r.scan.Skipped...)
	if len(r.scan.Skipped) != 2 || all == nil {
		t.Fatalf("Skipped = %v, want the two pipes", r.scan.Skipped)
	}
	for _, want := range []string{"event2/uevent is a named pipe (FIFO), not a regular file", "0005:0001:0002.0009/uevent is a named pipe (FIFO), not a regular file"} {
		if !strings.Contains(all.Error(), want) {
			t.Errorf("Skipped does not say %q:\n%v", want, all)
		}
	}
}
