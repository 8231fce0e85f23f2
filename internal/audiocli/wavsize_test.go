// SPDX-License-Identifier: Apache-2.0

package audiocli

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// streamedWAV is a RIFF/WAVE file as a stream sends it: a fmt chunk, an
// odd-length LIST chunk (padded), and a data chunk whose length, like
// RIFF's, is 0xFFFFFFFF.
func streamedWAV(samples int) []byte {
	le := binary.LittleEndian
	b := []byte("RIFF")
	b = le.AppendUint32(b, streamedSize)
	b = append(b, "WAVEfmt "...)
	b = le.AppendUint32(b, 16)
	b = le.AppendUint16(b, 1)
	b = le.AppendUint16(b, 2)
	b = le.AppendUint32(b, 48000)
	b = le.AppendUint32(b, 48000*4)
	b = le.AppendUint16(b, 4)
	b = le.AppendUint16(b, 16)
	b = append(b, "LIST"...)
	b = le.AppendUint32(b, 3)
	b = append(b, 'a', 'b', 'c', 0)
	b = append(b, "data"...)
	b = le.AppendUint32(b, streamedSize)
	return append(b, make([]byte, samples*4)...)
}

func TestFixWAVSizes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "now.wav")
	data := streamedWAV(480)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := fixWAVSizes(f, f, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, _ := os.ReadFile(path)
	dataAt := len(data) - 480*4 - 8
	if riff := binary.LittleEndian.Uint32(got[4:]); riff != uint32(len(data)-8) {
		t.Errorf("RIFF length %d, want %d", riff, len(data)-8)
	}
	if n := binary.LittleEndian.Uint32(got[dataAt+4:]); n != 480*4 {
		t.Errorf("data length %d, want %d", n, 480*4)
	}
	// Everything else is as it was.
	for i := range data {
		if (i >= 4 && i < 8) || (i >= dataAt+4 && i < dataAt+8) {
			continue
		}
		if got[i] != data[i] {
			t.Fatalf("byte %d changed", i)
		}
	}
}

// A file that is not a streamed WAV, or whose header ends early, is left
// as it is.
func TestFixWAVSizesLeavesOthersAlone(t *testing.T) {
	for name, data := range map[string][]byte{
		"flac":      []byte("fLaC\x00\x00\x00\x22 and the rest of a FLAC stream"),
		"sized wav": func() []byte { b := streamedWAV(4); binary.LittleEndian.PutUint32(b[4:], 60); return b }(),
		"cut":       streamedWAV(0)[:30],
	} {
		path := filepath.Join(t.TempDir(), "x")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		f, _ := os.OpenFile(path, os.O_RDWR, 0)
		if err := fixWAVSizes(f, f, int64(len(data))); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		f.Close()
		if got, _ := os.ReadFile(path); string(got) != string(data) {
			t.Errorf("%s: changed", name)
		}
	}
}

func FuzzFixWAVSizes(f *testing.F) {
	f.Add(streamedWAV(8))
	f.Add([]byte("RIFF\xff\xff\xff\xffWAVEdata\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "x")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		file, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		if err := fixWAVSizes(file, file, int64(len(data))); err != nil {
			t.Fatal(err)
		}
		if st, _ := file.Stat(); st.Size() != int64(len(data)) {
			t.Fatalf("the file grew from %d to %d bytes", len(data), st.Size())
		}
	})
}
