// SPDX-License-Identifier: Apache-2.0

// Command iec958play plays IEC 61937 AC-3 bursts to a PipeWire node as an
// IEC 958 stream (media subtype iec958, codec AC3), the way a player that
// passes a film's soundtrack through to a receiver does, so a test can
// find what reached ALSA. pw-cat has no such mode without FFmpeg, so it
// drives libpipewire-0.3 itself, loaded at run time through purego: the
// project builds without cgo, and PipeWire ships no Go client.
//
// Usage: iec958play <node.name> <seconds>, with PIPEWIRE_REMOTE (or
// PIPEWIRE_RUNTIME_DIR) naming the socket. It prints the stream's state
// changes and exits 0 once it has played for the given time while
// streaming, 1 when the stream fails or never streams within 20 s.
//
// Each burst is what IEC 61937-3 puts in 1536 stereo 16-bit frames for
// one AC-3 frame: the preamble Pa = 0xF872, Pb = 0x4E1F, Pc = 0x0001 (data
// type AC-3), Pd = the payload's length in bits, then the payload and
// zeros. The payload here is a made-up 1536-byte frame starting with
// AC-3's sync word; PipeWire passes it unchanged, which is what the test
// looks for.
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// SPA and PipeWire numbers (spa/utils/type.h, spa/param/param.h,
// spa/param/format.h, spa/param/audio/iec958.h, pipewire/stream.h).
const (
	typeID                = 3
	typeInt               = 4
	typeObject            = 15
	objectFormat          = 0x40003
	paramEnumFormat       = 3
	formatMediaType       = 1
	formatMediaSubtype    = 2
	formatAudioRate       = 0x10003
	formatAudioIEC958     = 0x10006
	mediaTypeAudio        = 1
	mediaSubtypeIEC958    = 3
	iec958CodecAC3        = 3
	directionOutput       = 1
	idAny                 = 0xffffffff
	flagAutoconnect       = 1 << 0
	flagMapBuffers        = 1 << 2
	versionStreamEvents   = 2
	streamStateError      = -1
	streamStateStreaming  = 3
	framesPerBurst        = 1536
	bytesPerFrame         = 4
	rate                  = 48000
	burstPayloadBytes     = 1536
	streamEventsSizeBytes = 8 + 11*8
)

// format is the EnumFormat object: IEC 958, AC-3, 48 kHz.
func format() []byte {
	var b []byte
	u32 := func(v uint32) { b = binary.LittleEndian.AppendUint32(b, v) }
	prop := func(key, typ, value uint32) {
		u32(key)
		u32(0)
		u32(4)
		u32(typ)
		u32(value)
		u32(0)
	}
	u32(8 + 4*24)
	u32(typeObject)
	u32(objectFormat)
	u32(paramEnumFormat)
	prop(formatMediaType, typeID, mediaTypeAudio)
	prop(formatMediaSubtype, typeID, mediaSubtypeIEC958)
	prop(formatAudioIEC958, typeID, iec958CodecAC3)
	prop(formatAudioRate, typeInt, rate)
	return b
}

// burst is one IEC 61937 AC-3 burst of framesPerBurst frames.
func burst(n int) []byte {
	b := make([]byte, framesPerBurst*bytesPerFrame)
	for i, w := range []uint16{0xF872, 0x4E1F, 0x0001, burstPayloadBytes * 8} {
		binary.LittleEndian.PutUint16(b[2*i:], w)
	}
	payload := b[8 : 8+burstPayloadBytes]
	payload[0], payload[1] = 0x77, 0x0B // AC-3's sync word, byte-swapped into 16-bit words
	for i := 2; i < len(payload); i++ {
		payload[i] = byte(n + i)
	}
	return b
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: iec958play <node.name> <seconds>")
		os.Exit(2)
	}
	seconds, err := strconv.ParseFloat(os.Args[2], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := play(os.Args[1], time.Duration(seconds*float64(time.Second))); err != nil {
		fmt.Fprintln(os.Stderr, "iec958play:", err)
		os.Exit(1)
	}
}

func play(target string, length time.Duration) error {
	// The thread loop's lock is a mutex of the OS thread that takes it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	lib, err := purego.Dlopen("libpipewire-0.3.so.0", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return err
	}
	var (
		pwInit          func(argc, argv unsafe.Pointer)
		loopNew         func(name string, props unsafe.Pointer) unsafe.Pointer
		loopGetLoop     func(loop unsafe.Pointer) unsafe.Pointer
		loopStart       func(loop unsafe.Pointer) int32
		loopLock        func(loop unsafe.Pointer)
		loopUnlock      func(loop unsafe.Pointer)
		propsNewString  func(s string) unsafe.Pointer
		streamNewSimple func(loop unsafe.Pointer, name string, props, events, data unsafe.Pointer) unsafe.Pointer
		streamConnect   func(stream unsafe.Pointer, direction, target, flags uint32, params unsafe.Pointer, n uint32) int32
		streamGetState  func(stream unsafe.Pointer, errp unsafe.Pointer) int32
		streamDequeue   func(stream unsafe.Pointer) unsafe.Pointer
		streamQueue     func(stream, buffer unsafe.Pointer) int32
	)
	for name, fn := range map[string]any{
		"pw_init": &pwInit, "pw_thread_loop_new": &loopNew, "pw_thread_loop_get_loop": &loopGetLoop,
		"pw_thread_loop_start": &loopStart, "pw_thread_loop_lock": &loopLock, "pw_thread_loop_unlock": &loopUnlock,
		"pw_properties_new_string": &propsNewString, "pw_stream_new_simple": &streamNewSimple,
		"pw_stream_connect": &streamConnect, "pw_stream_get_state": &streamGetState,
		"pw_stream_dequeue_buffer": &streamDequeue, "pw_stream_queue_buffer": &streamQueue,
	} {
		purego.RegisterLibFunc(fn, lib, name)
	}
	pwInit(nil, nil)
	loop := loopNew("iec958play", nil)
	if loop == nil {
		return fmt.Errorf("pw_thread_loop_new failed")
	}
	// The stream keeps pointers to its events and reads the format while
	// it connects: both are pinned for the life of the process.
	var pin runtime.Pinner
	events := make([]byte, streamEventsSizeBytes)
	binary.LittleEndian.PutUint32(events, versionStreamEvents)
	pod := format()
	params := []unsafe.Pointer{unsafe.Pointer(&pod[0])}
	pin.Pin(&events[0])
	pin.Pin(&pod[0])
	pin.Pin(&params[0])
	props := propsNewString(fmt.Sprintf("media.type=Audio media.category=Playback media.role=Movie target.object=%q node.name=iec958play", target))
	if loopStart(loop) < 0 {
		return fmt.Errorf("pw_thread_loop_start failed")
	}
	loopLock(loop)
	stream := streamNewSimple(loopGetLoop(loop), "iec958play", props, unsafe.Pointer(&events[0]), nil)
	res := int32(-1)
	if stream != nil {
		res = streamConnect(stream, directionOutput, idAny, flagAutoconnect|flagMapBuffers, unsafe.Pointer(&params[0]), 1)
	}
	loopUnlock(loop)
	if stream == nil || res < 0 {
		return fmt.Errorf("stream: new %v, connect %d", stream != nil, res)
	}
	state := func() int32 {
		loopLock(loop)
		defer loopUnlock(loop)
		return streamGetState(stream, nil)
	}
	last := int32(-2)
	var streaming time.Time
	start, n := time.Now(), 0
	for {
		s := state()
		if s != last {
			fmt.Printf("state %d after %v\n", s, time.Since(start).Round(time.Millisecond))
			last = s
		}
		switch {
		case s == streamStateError:
			return fmt.Errorf("the stream failed")
		case s == streamStateStreaming && streaming.IsZero():
			streaming = time.Now()
		case streaming.IsZero() && time.Since(start) > 20*time.Second:
			return fmt.Errorf("not streaming after 20 s (state %d)", s)
		case !streaming.IsZero() && time.Since(streaming) > length:
			fmt.Printf("played %d bursts\n", n)
			return nil
		}
		loopLock(loop)
		for {
			b := streamDequeue(stream)
			if b == nil {
				break
			}
			fill(b, burst(n))
			n++
			streamQueue(stream, b)
		}
		loopUnlock(loop)
		time.Sleep(5 * time.Millisecond)
	}
}

// fill copies data into the first data block of the pw_buffer b (struct
// pw_buffer's spa_buffer, its datas, the first spa_data's mapped memory
// and chunk), cut to what the block holds.
func fill(b unsafe.Pointer, data []byte) {
	spaBuffer := *(*unsafe.Pointer)(b)
	if *(*uint32)(unsafe.Add(spaBuffer, 4)) == 0 {
		return
	}
	d := *(*unsafe.Pointer)(unsafe.Add(spaBuffer, 16))
	maxsize := *(*uint32)(unsafe.Add(d, 20))
	mem := *(*unsafe.Pointer)(unsafe.Add(d, 24))
	chunk := *(*unsafe.Pointer)(unsafe.Add(d, 32))
	if mem == nil || chunk == nil {
		return
	}
	n := min(len(data), int(maxsize))
	copy(unsafe.Slice((*byte)(mem), n), data)
	*(*uint32)(chunk) = 0
	*(*uint32)(unsafe.Add(chunk, 4)) = uint32(n)
	*(*int32)(unsafe.Add(chunk, 8)) = bytesPerFrame
}
