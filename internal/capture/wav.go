// SPDX-License-Identifier: Apache-2.0

package capture

import "encoding/binary"

// wavHeaderSize is the size of the canonical RIFF WAVE header: the RIFF
// chunk header, a 16-byte "fmt " chunk and the "data" chunk header.
const wavHeaderSize = 44

// streamingSize is the RIFF and data size of a stream whose length is not
// known when the header leaves: the largest a 32-bit size can say, which
// readers (sox, ffmpeg, libsndfile) take as "read to the end".
const streamingSize = 0xFFFFFFFF

// wavHeader returns the header of 16-bit PCM (WAVE_FORMAT_PCM, RFC 2361)
// at rate Hz with channels channels. dataBytes is the length of the
// samples that follow when known, else 0 for a stream of unknown length
// (both sizes streamingSize).
func wavHeader(rate, channels int, dataBytes int64) []byte {
	h := make([]byte, wavHeaderSize)
	riff, data := uint32(streamingSize), uint32(streamingSize)
	if dataBytes > 0 && dataBytes <= streamingSize-(wavHeaderSize-8) {
		riff, data = uint32(dataBytes+wavHeaderSize-8), uint32(dataBytes)
	}
	blockAlign := channels * 2
	copy(h[0:], "RIFF")
	binary.LittleEndian.PutUint32(h[4:], riff)
	copy(h[8:], "WAVE")
	copy(h[12:], "fmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], 1) // WAVE_FORMAT_PCM
	binary.LittleEndian.PutUint16(h[22:], uint16(channels))
	binary.LittleEndian.PutUint32(h[24:], uint32(rate))
	binary.LittleEndian.PutUint32(h[28:], uint32(rate*blockAlign))
	binary.LittleEndian.PutUint16(h[32:], uint16(blockAlign))
	binary.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], data)
	return h
}
