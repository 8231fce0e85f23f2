// SPDX-License-Identifier: Apache-2.0

package inputrelay

import (
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/evdev"
)

// BenchmarkRelayCopy is the relay's own work for one frame of a pad (two
// axes, a button, SYN_REPORT) between the read of the controller's node
// and the write into the virtual device: decoding the records, following
// the state, encoding them again. The system calls on either side are
// the kernel's and are measured in the VM tier. Target: at most 20 µs a
// frame.
func BenchmarkRelayCopy(b *testing.B) {
	caps := evdev.Capabilities{
		Name: "Wireless Controller", ID: evdev.ID{Bus: 5, Vendor: 0x054c, Product: 0x09cc},
		Keys: []uint16{0x130, 0x131},
		Abs: []evdev.Axis{
			{Code: 0, AbsInfo: evdev.AbsInfo{Value: 128, Maximum: 255}},
			{Code: 1, AbsInfo: evdev.AbsInfo{Value: 128, Maximum: 255}},
		},
	}
	r := newRelay(nil, caps)
	r.needRest = false
	var raw []byte
	for _, e := range []evdev.Event{
		{Type: evdev.EvAbs, Code: 0, Value: 200}, {Type: evdev.EvAbs, Code: 1, Value: 40},
		{Type: evdev.EvKey, Code: 0x130, Value: 1}, {Type: evdev.EvSyn, Code: evdev.SynReport},
	} {
		raw = evdev.AppendEvent(raw, e)
	}
	var in, out []evdev.Event
	var wbuf []byte
	b.ReportAllocs()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		in, _ = evdev.DecodeEvents(in[:0], raw)
		out = out[:0]
		r.mu.Lock()
		for _, e := range in {
			out = r.trackLocked(out, e)
		}
		r.mu.Unlock()
		wbuf = wbuf[:0]
		for _, e := range out {
			wbuf = evdev.AppendEvent(wbuf, e)
		}
	}
	per := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(float64(per.Nanoseconds())/1000, "us/frame")
}
