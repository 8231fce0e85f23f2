// SPDX-License-Identifier: Apache-2.0

package alsatest

import (
	"os"
	"testing"

	"github.com/liken-sh/operators/internal/alsa"
)

func addFile(f *testing.F, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

// FuzzImportAlsaInfo: no report panics the importer, and every dump it
// returns is valid and served.
func FuzzImportAlsaInfo(f *testing.F) {
	addFile(f, xpsAlsaInfo)
	f.Fuzz(func(t *testing.T, text []byte) {
		info, err := ImportAlsaInfo(text)
		if err != nil {
			return
		}
		for _, d := range info.Cards {
			if _, err := alsa.NewRecorded(d); err != nil {
				t.Fatalf("imported dump not served: %v", err)
			}
		}
	})
}

// FuzzImportAmixerContents: no input panics the importer; its controls
// either validate or are refused with an error.
func FuzzImportAmixerContents(f *testing.F) {
	addFile(f, tglAmixer)
	f.Fuzz(func(t *testing.T, text []byte) {
		cs, err := ImportAmixerContents(text)
		if err != nil {
			return
		}
		d := &alsa.Dump{Info: alsa.DumpCardInfo{ID: "x", Driver: "y", Name: "z"}, Controls: cs}
		if err := d.Validate(); err == nil {
			if _, err := alsa.NewRecorded(d); err != nil {
				t.Fatal(err)
			}
		}
	})
}
