// SPDX-License-Identifier: Apache-2.0

package mixer

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/alsa"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func find(t *testing.T, list []Control, key string) Control {
	t.Helper()
	c, ok := Find(list, key)
	if !ok {
		t.Fatalf("no control %q among %q", key, keys(list))
	}
	return c
}

// set parses and writes one value the way the operator does for a
// spec.controls entry.
func set(c alsa.Control, ctl Control, v intstr.IntOrString) error {
	val, err := ctl.ParseIntOrString(v)
	if err != nil {
		return err
	}
	return Write(c, ctl, val)
}

// TestWriteXPS: values parsed from spec form reach the recorded card
// through ELEM_WRITE (a subscriber sees the change) and read back as
// written; an HDMI slot's switch changes only that slot.
func TestWriteXPS(t *testing.T) {
	c := xps(t, 0)
	m := read(t, c)
	sink := m.Sink(0)
	for key, v := range map[string]intstr.IntOrString{
		"PGA1.0 1 Master Playback Volume": intstr.FromString("20,10"),
		"Speaker Switch":                  intstr.FromString("off"),
		"Headphone Switch":                intstr.FromInt32(1),
	} {
		if err := set(c, find(t, sink, key), v); err != nil {
			t.Errorf("%s = %s: %v", key, v.String(), err)
		}
	}
	if err := set(c, find(t, m.Sink(6), IEC958SwitchName), intstr.FromString("off")); err != nil {
		t.Error(err)
	}

	m = read(t, c)
	for key, want := range map[string]string{"PGA1.0 1 Master Playback Volume": "20,10", "Speaker Switch": "off", "Headphone Switch": "on"} {
		if got := find(t, m.Sink(2), key).Format(); got != want {
			t.Errorf("%s reads back %q, want %q", key, got, want)
		}
	}
	if got := find(t, m.Sink(0), "PGA1.0 1 Master Playback Volume").Value; !slices.Equal(got, []int64{20, 10}) {
		t.Errorf("PGA master raw %v", got)
	}
	for dev, want := range map[int]string{5: "on", 6: "off", 7: "on"} {
		if got := find(t, m.Sink(dev), IEC958SwitchName).Format(); got != want {
			t.Errorf("HDMI PCM %d switch %q, want %q", dev, got, want)
		}
	}
}

// TestWriteNotifies: a write is a kernel write: another handle subscribed
// to the card's events hears of it.
func TestWriteNotifies(t *testing.T) {
	r := hdaLike(t)
	c, watcher := r.Open(), r.Open()
	defer c.Close()
	defer watcher.Close()
	if err := watcher.Subscribe(); err != nil {
		t.Fatal(err)
	}
	src := readHDA(t, c).Source()
	if err := set(c, find(t, src, "Input Source"), intstr.FromString("Headset Mic")); err != nil {
		t.Fatal(err)
	}
	got := make(chan []alsa.Event, 1)
	go func() {
		evs, _ := watcher.ReadEvents()
		got <- evs
	}()
	select {
	case evs := <-got:
		if len(evs) != 1 || evs[0].ID.Name != "Input Source" || evs[0].Mask&alsa.EventValue == 0 {
			t.Errorf("events %+v, want a value event on Input Source", evs)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no event after the write")
	}
	if got := find(t, readHDA(t, c).Source(), "Input Source").Format(); got != "Headset Mic" {
		t.Errorf("Input Source reads back %q", got)
	}
}

// TestParse: what each kind of control takes.
func TestParse(t *testing.T) {
	c := hdaLike(t).Open()
	defer c.Close()
	m := readHDA(t, c)
	all := append(m.Sink(0), m.Source()...)
	all = append(all, fuzzControls[5])
	all[len(all)-1].Key = "Stereo Source" // items "A", "B,C", "B", "D"
	for _, tc := range []struct {
		key  string
		in   intstr.IntOrString
		want []int64
	}{
		{"Master Playback Volume", intstr.FromInt32(87), []int64{87, 87}},
		{"Master Playback Volume", intstr.FromString(" 0 "), []int64{0, 0}},
		{"Master Playback Volume", intstr.FromString("10, 20"), []int64{10, 20}},
		{"Front Switch", intstr.FromString("on"), []int64{1, 1}},
		{"Front Switch", intstr.FromString("OFF"), []int64{0, 0}},
		{"Front Switch", intstr.FromString("true"), []int64{1, 1}},
		{"Front Switch", intstr.FromInt32(0), []int64{0, 0}},
		{"Front Switch", intstr.FromString("off,on"), []int64{0, 1}},
		{"Input Source", intstr.FromString("Headset Mic"), []int64{1}},
		{"Input Source", intstr.FromString("Mic, Rear"), []int64{2}}, // an item with a comma, taken whole
		{"Beep Playback Volume", intstr.FromInt32(-10), []int64{-10}},
		{"Stereo Source", intstr.FromString("B,C,A"), []int64{1, 0}},
		{"Stereo Source", intstr.FromString("A, B,C"), []int64{0, 1}},
		{"Stereo Source", intstr.FromString("B,C"), []int64{1, 1}}, // one item, both channels
		{"Stereo Source", intstr.FromString("B,B"), []int64{2, 2}},
		{"Stereo Source", intstr.FromString("B,D"), []int64{2, 3}},
		{"Beep Playback Volume", intstr.FromString("4"), []int64{4}},
	} {
		ctl := find(t, all, tc.key)
		v, err := ctl.ParseIntOrString(tc.in)
		if err != nil || v.Type != ctl.Type || !slices.Equal(v.Ints, tc.want) {
			t.Errorf("%s: parse %s = %+v, %v; want %v", tc.key, tc.in.String(), v, err, tc.want)
		}
	}
}

// TestParseRefuses: bad values are refused with an error that names the
// control and the value and says why, and nothing is written.
func TestParseRefuses(t *testing.T) {
	r := hdaLike(t)
	c := r.Open()
	defer c.Close()
	m := readHDA(t, c)
	all := append(m.Sink(0), m.Source()...)
	before := r.Snapshot()
	for _, tc := range []struct {
		key  string
		in   intstr.IntOrString
		want string
	}{
		{"Master Playback Volume", intstr.FromInt32(140), "Master Playback Volume: 140 is past the maximum 87"},
		{"Master Playback Volume", intstr.FromInt32(-1), "Master Playback Volume: -1 is below the minimum 0"},
		{"Master Playback Volume", intstr.FromString("loud"), `Master Playback Volume: "loud" is not an integer in 0..87`},
		{"Master Playback Volume", intstr.FromString("1,2,3"), `Master Playback Volume: "1,2,3" holds 3 values; the control has 2 channel(s): give one value, or one per channel`},
		{"Master Playback Volume", intstr.FromString("10,100"), "Master Playback Volume: 100 is past the maximum 87"},
		{"Master Playback Volume", intstr.FromString(""), "Master Playback Volume: an empty value"},
		{"Master Playback Volume", intstr.FromString("99999999999999999999"), `Master Playback Volume: "99999999999999999999" is not an integer in 0..87`},
		{"Front Switch", intstr.FromString("maybe"), `Front Switch: "maybe" is neither on nor off`},
		{"Front Switch", intstr.FromInt32(2), `Front Switch: "2" is neither on nor off`},
		{"Input Source", intstr.FromString("Line"), `Input Source: "Line" is not one of its items "Internal Mic", "Headset Mic", "Mic, Rear"`},
		{"Input Source", intstr.FromInt32(1), `Input Source: "1" is not one of its items`},
		{"Beep Playback Volume", intstr.FromInt32(3), "Beep Playback Volume: 3 is not a whole number of steps of 2 above the minimum -10"},
		{"Capture Volume,1", intstr.FromInt32(64), "Capture Volume,1: 64 is past the maximum 63"},
	} {
		ctl := find(t, all, tc.key)
		err := set(c, ctl, tc.in)
		if err == nil || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want {
			t.Errorf("%s = %s: error %v, want %q", tc.key, tc.in.String(), err, tc.want)
		}
	}
	if after := r.Snapshot(); !dumpValuesEqual(before, after) {
		t.Error("a refused value changed the card")
	}
}

func dumpValuesEqual(a, b *alsa.Dump) bool {
	if len(a.Controls) != len(b.Controls) {
		return false
	}
	for i := range a.Controls {
		if !slices.Equal(a.Controls[i].Values, b.Controls[i].Values) {
			return false
		}
	}
	return true
}

// TestWriteRefuses: Write checks before it writes: a read-only control,
// a value of another type or channel count or out of range; and the
// kernel's own refusal comes back wrapped, naming the control.
func TestWriteRefuses(t *testing.T) {
	r := hdaLike(t)
	c := r.Open()
	defer c.Close()
	m := readHDA(t, c)
	sink := m.Sink(0)
	master := find(t, sink, "Master Playback Volume")
	before := r.Snapshot()

	ro := master
	ro.Access &^= alsa.AccessWrite
	for _, tc := range []struct {
		ctl  Control
		v    alsa.Value
		want string
	}{
		{ro, alsa.Value{Type: alsa.TypeInteger, Ints: []int64{1, 1}}, "Master Playback Volume: the control is read-only"},
		{master, alsa.Value{Type: alsa.TypeBoolean, Ints: []int64{1, 1}}, "Master Playback Volume: a BOOLEAN value for a INTEGER control"},
		{master, alsa.Value{Type: alsa.TypeInteger, Ints: []int64{1}}, "Master Playback Volume: 1 values for 2 channel(s)"},
		{master, alsa.Value{Type: alsa.TypeInteger, Ints: []int64{1, 88}}, "Master Playback Volume: 88 is past the maximum 87"},
		{find(t, sink, "Front Switch"), alsa.Value{Type: alsa.TypeBoolean, Ints: []int64{1, 2}}, "Front Switch: 2 is neither 0 (off) nor 1 (on)"},
		{find(t, sink, "Auto-Mute Mode"), alsa.Value{Type: alsa.TypeEnumerated, Ints: []int64{2}}, "Auto-Mute Mode: item 2 of 2 items"},
	} {
		if err := Write(c, tc.ctl, tc.v); err == nil || err.Error() != tc.want {
			t.Errorf("Write(%s, %+v) = %v, want %q", tc.ctl, tc.v, err, tc.want)
		}
	}
	if after := r.Snapshot(); !dumpValuesEqual(before, after) {
		t.Error("a refused write changed the card")
	}

	// The card itself refuses: a jack element is read-only to the kernel
	// whatever a caller believes.
	jack := Control{ID: alsa.ElemID{Iface: alsa.IfaceCard, Name: "Headphone Jack"}, Type: alsa.TypeBoolean, Access: alsa.AccessRead | alsa.AccessWrite, Channels: 1}
	err := Write(c, jack, alsa.Value{Type: alsa.TypeBoolean, Ints: []int64{1}})
	if !errors.Is(err, unix.EPERM) || err.Error()[:len("Headphone Jack: ")] != "Headphone Jack: " {
		t.Errorf("write to a read-only element: %v, want EPERM naming it", err)
	}
}

// TestFormat: the status spelling of each kind, one value when channels
// agree and every channel when they differ.
func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		c    Control
		want string
	}{
		{Control{Type: alsa.TypeInteger, Value: []int64{75, 75}}, "75"},
		{Control{Type: alsa.TypeInteger, Value: []int64{75, 70}}, "75,70"},
		{Control{Type: alsa.TypeInteger64, Value: []int64{-1 << 40}}, "-1099511627776"},
		{Control{Type: alsa.TypeBoolean, Value: []int64{0}}, "off"},
		{Control{Type: alsa.TypeBoolean, Value: []int64{1, 0}}, "on,off"},
		{Control{Type: alsa.TypeEnumerated, Items: []string{"A", "B"}, Value: []int64{1}}, "B"},
		{Control{Type: alsa.TypeEnumerated, Items: []string{"A", "B"}, Value: []int64{7}}, "7"},
		{Control{Type: alsa.TypeInteger}, ""},
	} {
		if got := tc.c.Format(); got != tc.want {
			t.Errorf("%+v formats as %q, want %q", tc.c, got, tc.want)
		}
	}
}
