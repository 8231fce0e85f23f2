// SPDX-License-Identifier: Apache-2.0

package images_test

import (
	"debug/elf"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEveryLibraryResolvesInTheImage asks each image's own dynamic loader
// (ld.so --list, which maps the libraries without running the object's
// code) to resolve every dynamically linked file the image holds, inside
// the image: the programs, and the modules and plugins that are only ever
// dlopen'd (Bluetooth codecs, WirePlumber modules), which the runs above
// do not all load. Nothing may be missing.
func TestEveryLibraryResolvesInTheImage(t *testing.T) {
	for _, name := range []string{"audio-operator", "bluetoothd"} {
		t.Run(name, func(t *testing.T) {
			img := unpack(t, name)
			objects := dynamicObjects(t, img.root)
			if len(objects) < 10 {
				t.Fatalf("only %d dynamically linked files", len(objects))
			}
			s := sandbox{image: img}
			for _, obj := range objects {
				r := s.run(t, time.Minute, "/lib64/ld-linux-x86-64.so.2", "--list", obj)
				if r.exit != 0 || strings.Contains(r.stdout, "not found") {
					t.Errorf("%s: exit %d (%v)\n%s%s", obj, r.exit, r.err, r.stdout, r.stderr)
				}
			}
			t.Logf("%d dynamically linked files resolve", len(objects))
		})
	}
}

// dynamicObjects lists, as image paths, the regular files under root that
// are ELF files naming shared libraries.
func dynamicObjects(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := elf.Open(p)
		if err != nil {
			return nil // not ELF
		}
		defer f.Close()
		if needed, _ := f.DynString(elf.DT_NEEDED); len(needed) > 0 {
			out = append(out, "/"+filepath.ToSlash(strings.TrimPrefix(p, root+"/")))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
