// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"testing"

	"github.com/liken-sh/operators/test/fixtures"
)

// FuzzParseInfo: an info file comes from the storage tree bluetoothd
// wrote or from a Secret anyone with write access in the namespace made.
// ParseInfo either refuses it or returns keys that re-read the same from
// the file, and never panics.
func FuzzParseInfo(f *testing.F) {
	for _, name := range []string{"8bitdo-nes30-pro.info", "razer-basilisk-x-hyperspeed.info"} {
		f.Add(fixtures.BlueZ(f, name))
	}
	f.Add([]byte("[General]\nName=pad\nSupportedTechnologies=BR/EDR;LE;\n[LinkKey]\nKey=0x00112233445566778899AABBCCDDEEFF\nType=4\nPINLength=0\n"))
	f.Add([]byte("[LongTermKey]\nKey=00112233445566778899AABBCCDDEEFF\nAuthenticated=2\nEncSize=16\nEDiv=0\nRand=0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := ParseInfo(data)
		if err != nil {
			if info != nil {
				t.Fatalf("an error (%v) with an Info", err)
			}
			return
		}
		again, err := ParseInfo(data)
		if err != nil || again.Bonded() != info.Bonded() || again.Name != info.Name || len(again.Technologies) != len(info.Technologies) {
			t.Fatalf("a second parse of the same file differs: %v", err)
		}
		if _, err := ParseKeyFile(data); err != nil {
			t.Fatalf("ParseInfo accepted a file ParseKeyFile refuses: %v", err)
		}
		for _, tech := range info.Technologies {
			if tech == "" {
				t.Fatalf("an empty technology in %q", info.Technologies)
			}
		}
	})
}
