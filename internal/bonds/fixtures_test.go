// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/test/fixtures"
)

// The addresses the tests use. The 8Bitdo's is the fixture's directory
// name; the Razer's was not recorded, so it gets a static random address
// (top two bits set), as its AddressType=static says it has.
var (
	adapter    = bdaddr.MustParse("5C:F3:70:8B:1A:2E")
	otherRadio = bdaddr.MustParse("00:1A:7D:DA:71:13")
	pad        = bdaddr.MustParse("E4:17:D8:C5:67:6D")
	mouse      = bdaddr.MustParse("F4:9A:2C:31:7D:05")
)

// recordedBonds are the fixtures as bonds of adapter.
func recordedBonds(t testing.TB) []Bond {
	return []Bond{
		{Adapter: adapter, Device: pad, Info: fixtures.BlueZ(t, "8bitdo-nes30-pro.info"), Cache: fixtures.BlueZ(t, "8bitdo-nes30-pro.cache")},
		{Adapter: adapter, Device: mouse, Info: fixtures.BlueZ(t, "razer-basilisk-x-hyperspeed.info")},
	}
}

// writeFile creates path's parents and writes data at mode.
func writeFile(t testing.TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}

// snapshot maps every path under root (relative) to its mode and, for
// files, contents, and for links, target.
func snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		v := info.Mode().String()
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			v += " -> " + target
		case info.Mode().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
