// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/test/fixtures"
)

// bluezTree lays out what bluetoothd leaves under /var/lib/bluetooth for
// adapter after pairing the two fixture devices, plus the things that are
// not bonds, and returns the root.
func bluezTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "bluetooth")
	dir := AdapterDir(root, adapter)
	writeFile(t, filepath.Join(dir, pad.String(), "info"), fixtures.BlueZ(t, "8bitdo-nes30-pro.info"), 0o600)
	writeFile(t, filepath.Join(dir, "cache", pad.String()), fixtures.BlueZ(t, "8bitdo-nes30-pro.cache"), 0o600)
	writeFile(t, filepath.Join(dir, mouse.String(), "info"), fixtures.BlueZ(t, "razer-basilisk-x-hyperspeed.info"), 0o600)
	writeFile(t, filepath.Join(dir, mouse.String(), "attributes"), nil, 0o600)
	// Not bonds: the adapter's own files, a neighbour seen in a scan, a
	// pairing not yet written, and names that are not addresses.
	writeFile(t, filepath.Join(dir, "settings"), nil, 0o600)
	writeFile(t, filepath.Join(dir, "identity"), []byte("[General]\nIdentityResolvingKey=00\n"), 0o600)
	writeFile(t, filepath.Join(dir, "cache", "11:22:33:44:55:66"), []byte("[General]\nName=Neighbour TV\n"), 0o600)
	writeFile(t, filepath.Join(dir, "AA:BB:CC:DD:EE:01", "info"), nil, 0o600)
	writeFile(t, filepath.Join(dir, "AA:BB:CC:DD:EE:02", "attributes"), nil, 0o600)
	writeFile(t, filepath.Join(dir, "not-an-address", "info"), fixtures.BlueZ(t, "8bitdo-nes30-pro.info"), 0o600)
	// Another adapter's tree beside it.
	writeFile(t, filepath.Join(AdapterDir(root, otherRadio), pad.String(), "info"), []byte("[LinkKey]\nKey=00000000000000000000000000000001\n"), 0o600)
	return root
}

func TestReadTree(t *testing.T) {
	root := bluezTree(t)
	bonds, skipped, err := ReadTree(root, adapter)
	if err != nil || len(skipped) != 0 {
		t.Fatalf("err %v, skipped %v", err, skipped)
	}
	want := recordedBonds(t)
	if len(bonds) != len(want) {
		t.Fatalf("%d bonds, want %d: %+v", len(bonds), len(want), bonds)
	}
	for i := range want {
		b, w := bonds[i], want[i]
		if b.Adapter != w.Adapter || b.Device != w.Device || !bytes.Equal(b.Info, w.Info) || !bytes.Equal(b.Cache, w.Cache) {
			t.Errorf("bond %d: %s with %d+%d bytes, want %s with %d+%d", i, b.Device, len(b.Info), len(b.Cache), w.Device, len(w.Info), len(w.Cache))
		}
	}
	if bonds[1].Cache != nil {
		t.Error("the mouse has no cache file but got a cache")
	}
	// An adapter with no directory has no bonds.
	if bonds, skipped, err := ReadTree(root, bdaddr.MustParse("00:00:00:00:00:01")); err != nil || bonds != nil || skipped != nil {
		t.Fatalf("missing adapter: %v %v %v", bonds, skipped, err)
	}
}

func TestReadTreeSkipsWhatItCannotStore(t *testing.T) {
	root := bluezTree(t)
	dir := AdapterDir(root, adapter)
	// An oversized cache: the bond travels without it.
	big := append([]byte("[General]\nName=x\n[Attributes]\n"), bytes.Repeat([]byte("0x0001=2800:0008:1800\n"), MaxCacheSize/20)...)
	writeFile(t, filepath.Join(dir, "cache", mouse.String()), big, 0o600)
	// An info that is not a key file: no bond.
	bad := bdaddr.MustParse("AA:BB:CC:DD:EE:03")
	writeFile(t, filepath.Join(dir, bad.String(), "info"), []byte("\x00\x01garbage"), 0o600)
	// A symbolic link where a device directory belongs, and one where an
	// info file belongs: never followed.
	outside := filepath.Join(t.TempDir(), "outside")
	writeFile(t, filepath.Join(outside, "info"), fixtures.BlueZ(t, "8bitdo-nes30-pro.info"), 0o600)
	if err := os.Symlink(outside, filepath.Join(dir, "AA:BB:CC:DD:EE:04")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "AA:BB:CC:DD:EE:05"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "info"), filepath.Join(dir, "AA:BB:CC:DD:EE:05", "info")); err != nil {
		t.Fatal(err)
	}

	bonds, skipped, err := ReadTree(root, adapter)
	if err != nil {
		t.Fatal(err)
	}
	if len(bonds) != 2 || bonds[0].Device != pad || bonds[1].Device != mouse || bonds[1].Cache != nil {
		t.Fatalf("bonds %+v", bonds)
	}
	all := ""
	for _, s := range skipped {
		all += s.Error() + "\n"
	}
	for _, want := range []string{
		"cache/" + mouse.String() + ": larger than allowed",
		"AA:BB:CC:DD:EE:03/info: info is not a BlueZ key file",
		"AA:BB:CC:DD:EE:04: a symbolic link",
		"AA:BB:CC:DD:EE:05/info is a symbolic link",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("skipped does not say %q:\n%s", want, all)
		}
	}
	if len(skipped) != 4 {
		t.Errorf("%d skipped, want 4:\n%s", len(skipped), all)
	}
}

func TestWriteTree(t *testing.T) {
	root := filepath.Join(t.TempDir(), "bluetooth")
	bonds := recordedBonds(t)
	report, err := WriteTree(root, adapter, bonds)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Written) != 3 || len(report.Kept)+len(report.Unchanged) != 0 {
		t.Fatalf("report %+v", report)
	}
	dir := AdapterDir(root, adapter)
	want := map[string]string{
		".":                      "drwx------",
		pad.String():             "drwx------",
		pad.String() + "/info":   "-rw------- " + string(bonds[0].Info),
		"cache":                  "drwx------",
		"cache/" + pad.String():  "-rw------- " + string(bonds[0].Cache),
		mouse.String():           "drwx------",
		mouse.String() + "/info": "-rw------- " + string(bonds[1].Info),
	}
	got := snapshot(t, dir)
	if len(got) != len(want) {
		t.Errorf("tree has %d entries, want %d: %v", len(got), len(want), keys(got))
	}
	for path, w := range want {
		if got[path] != w {
			t.Errorf("%s: %.40q, want %.40q", path, got[path], w)
		}
	}

	// Read back, byte for byte.
	back, skipped, err := ReadTree(root, adapter)
	if err != nil || len(skipped) != 0 || len(back) != 2 {
		t.Fatalf("read back: %v %v %v", back, skipped, err)
	}
	for i := range back {
		if !bytes.Equal(back[i].Info, bonds[i].Info) || !bytes.Equal(back[i].Cache, bonds[i].Cache) {
			t.Errorf("bond %s differs after the round trip", back[i].Device)
		}
	}

	// Again: nothing to do.
	report, err = WriteTree(root, adapter, bonds)
	if err != nil || len(report.Unchanged) != 3 || len(report.Written) != 0 {
		t.Fatalf("second write: %+v, %v", report, err)
	}

	// bluetoothd has since rewritten the pad's info: the working copy is
	// newer than any Secret and stays.
	newer := append(bytes.Clone(bonds[0].Info), []byte("\n[General]\nAlias=Player 1\n")...)
	writeFile(t, filepath.Join(dir, pad.String(), "info"), newer, 0o600)
	report, err = WriteTree(root, adapter, bonds)
	if err != nil || len(report.Kept) != 1 || len(report.Unchanged) != 2 {
		t.Fatalf("third write: %+v, %v", report, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, pad.String(), "info")); !bytes.Equal(b, newer) {
		t.Fatal("the newer info was overwritten")
	}
}

func TestWriteTreeRefuses(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "bluetooth")
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	// A planted link where the cache directory belongs.
	dir := AdapterDir(root, adapter)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "cache")); err != nil {
		t.Fatal(err)
	}
	// A planted link where the mouse's info belongs.
	if err := os.MkdirAll(filepath.Join(dir, mouse.String()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "info"), filepath.Join(dir, mouse.String(), "info")); err != nil {
		t.Fatal(err)
	}
	bonds := recordedBonds(t)
	bonds = append(bonds,
		Bond{Adapter: otherRadio, Device: bdaddr.MustParse("AA:BB:CC:DD:EE:06"), Info: bonds[0].Info},
		Bond{Adapter: adapter, Device: bdaddr.MustParse("AA:BB:CC:DD:EE:07"), Info: []byte("not a key file")},
		Bond{Adapter: adapter, Device: bdaddr.MustParse("AA:BB:CC:DD:EE:08"), Info: bonds[1].Info},
	)
	report, err := WriteTree(root, adapter, bonds)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"cache is a symbolic link", "info is a symbolic link", "belongs to adapter " + otherRadio.String(), "AA:BB:CC:DD:EE:07", "not a BlueZ key file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	// The good bond after the bad ones is still written, and the pad's
	// info too (only its cache was refused).
	if len(report.Written) != 2 {
		t.Errorf("written %v", report.Written)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("wrote outside the tree: %v", entries)
	}
	if _, err := os.Stat(AdapterDir(root, otherRadio)); !os.IsNotExist(err) {
		t.Fatalf("created another adapter's directory: %v", err)
	}
	for path := range snapshot(t, dir) {
		if strings.Contains(path, ".tmp") {
			t.Errorf("temporary file left: %s", path)
		}
	}
}

func keys(m map[string]string) []string {
	var k []string
	for p := range m {
		k = append(k, p)
	}
	return k
}

// BlueZ keeps an info file with [General] alone for a device it trusts but
// holds no key for (never bonded, or a re-pair that failed). That is not
// a bond: write-back must not take it for one.
func TestReadTreeSkipsAnInfoWithoutKeys(t *testing.T) {
	root := bluezTree(t)
	dir := AdapterDir(root, adapter)
	trusted := bdaddr.MustParse("AA:BB:CC:DD:EE:0A")
	writeFile(t, filepath.Join(dir, trusted.String(), "info"), []byte("[General]\nName=Living room TV\nTrusted=true\nBlocked=false\n"), 0o600)
	// Only an identity key: BlueZ can resolve the device's address, but
	// nothing encrypts a link.
	irkOnly := bdaddr.MustParse("AA:BB:CC:DD:EE:0B")
	writeFile(t, filepath.Join(dir, irkOnly.String(), "info"), []byte("[General]\nName=Phone\n\n[IdentityResolvingKey]\nKey=00112233445566778899AABBCCDDEEFF\n"), 0o600)

	bonds, skipped, err := ReadTree(root, adapter)
	if err != nil {
		t.Fatal(err)
	}
	if len(bonds) != 2 || bonds[0].Device != pad || bonds[1].Device != mouse {
		var got []string
		for _, b := range bonds {
			got = append(got, b.Device.String())
		}
		t.Fatalf("bonds of %v, want only the pad and the mouse", got)
	}
	all := errors.Join(skipped...)
	if len(skipped) != 2 || all == nil {
		t.Fatalf("skipped %v, want the two keyless infos", skipped)
	}
	for _, want := range []string{trusted.String() + "/info: info holds no link key or long term key: not a bond", irkOnly.String() + "/info: info holds no link key or long term key: not a bond"} {
		if !strings.Contains(all.Error(), want) {
			t.Errorf("skipped does not say %q:\n%v", want, all)
		}
	}
}

// A named pipe where an info or a cache file belongs is refused with a
// reason, never opened: opening one for reading waits for a writer, and
// the operator's write-back would wait with it, forever.
func TestReadTreeRefusesNamedPipes(t *testing.T) {
	root := bluezTree(t)
	dir := AdapterDir(root, adapter)
	// The pad's cache and a third device's info are pipes.
	if err := os.Remove(filepath.Join(dir, "cache", pad.String())); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "cache", pad.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	piped := bdaddr.MustParse("AA:BB:CC:DD:EE:0C")
	if err := os.MkdirAll(filepath.Join(dir, piped.String()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, piped.String(), "info"), 0o600); err != nil {
		t.Fatal(err)
	}

	type result struct {
		bonds   []Bond
		skipped []error
		err     error
	}
	done := make(chan result, 1)
	go func() {
		b, s, err := ReadTree(root, adapter)
		done <- result{b, s, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("ReadTree is still waiting on a named pipe after 30 s")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.bonds) != 2 || r.bonds[0].Device != pad || r.bonds[0].Cache != nil || r.bonds[1].Device != mouse {
		t.Errorf("bonds: want the pad without its cache and the mouse, got %d", len(r.bonds))
	}
	all := errors.Join(r.skipped...)
	if len(r.skipped) != 2 || all == nil {
		t.Fatalf("skipped %v, want the two pipes", r.skipped)
	}
	for _, want := range []string{
		"cache/" + pad.String() + " is a named pipe (FIFO), not a regular file",
		piped.String() + "/info is a named pipe (FIFO), not a regular file",
	} {
		if !strings.Contains(all.Error(), want) {
			t.Errorf("skipped does not say %q:\n%v", want, all)
		}
	}
}
