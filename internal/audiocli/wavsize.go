// SPDX-License-Identifier: Apache-2.0

package audiocli

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
)

// wavHeaderLimit bounds how far into a file the data chunk is looked for.
const wavHeaderLimit = 4096

// streamedSize is the length a streamed WAV's RIFF and data chunks carry
// while their end is unknown.
const streamedSize = math.MaxUint32

// fixWAVSizes writes the real RIFF and data chunk lengths into a WAV file
// of size bytes that was streamed with both left at 0xFFFFFFFF, so that
// tools which trust the header (rather than reading to the end) see the
// capture's true duration. It changes nothing in a file whose header is
// not such a RIFF/WAVE stream, whose data chunk does not start within
// 4096 bytes, or that is 4 GiB or more (the header cannot say so). The
// chunk layout is RIFF's: a 4-byte id and a little-endian 32-bit length
// before each chunk's body, padded to an even length.
func fixWAVSizes(f io.ReaderAt, w io.WriterAt, size int64) error {
	if size < 12 || size >= streamedSize {
		return nil
	}
	head := make([]byte, min(size, wavHeaderLimit))
	if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
		return err
	}
	if !bytes.Equal(head[0:4], []byte("RIFF")) || !bytes.Equal(head[8:12], []byte("WAVE")) ||
		binary.LittleEndian.Uint32(head[4:8]) != streamedSize {
		return nil
	}
	for off := 12; off+8 <= len(head); {
		id, n := head[off:off+4], binary.LittleEndian.Uint32(head[off+4:off+8])
		if bytes.Equal(id, []byte("data")) {
			if n != streamedSize {
				return nil
			}
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], uint32(size-int64(off)-8))
			if _, err := w.WriteAt(b[:], int64(off+4)); err != nil {
				return err
			}
			binary.LittleEndian.PutUint32(b[:], uint32(size-8))
			_, err := w.WriteAt(b[:], 4)
			return err
		}
		if n == streamedSize {
			return nil
		}
		off += 8 + int(n) + int(n&1)
	}
	return nil
}
