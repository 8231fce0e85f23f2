// SPDX-License-Identifier: Apache-2.0

package captureapi

import (
	"strings"
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		in   string
		want Span
		err  string
	}{
		{"2,4", Span{2 * s, 4 * s}, ""},
		{"npt:2,4", Span{2 * s, 4 * s}, ""},
		{"10", Span{10 * s, 0}, ""},
		{",20", Span{0, 20 * s}, ""},
		{"0.5,1.25", Span{500 * time.Millisecond, 1250 * time.Millisecond}, ""},
		{"1.", Span{s, 0}, ""},
		{"00:30,01:00", Span{30 * s, 60 * s}, ""},
		{"0:00:30,1:00:00", Span{30 * s, time.Hour}, ""},
		{"60", Span{60 * s, 0}, ""},
		{"1.0000000019,2", Span{s + 1, 2 * s}, ""},
		{"", Span{}, "empty"},
		{",", Span{}, "comma"},
		{"2,", Span{}, "comma"},
		{"4,2", Span{}, "before end"},
		{"2,2", Span{}, "before end"},
		{"60.001", Span{}, "at most"},
		{"61,70", Span{}, "at most"},
		{"1:60", Span{}, "00 to 59"},
		{"1:5", Span{}, "two digits"},
		{"-1", Span{}, "not seconds"},
		{"1e3", Span{}, "not seconds"},
		{"1.x", Span{}, "fraction"},
		{" 1", Span{}, "not seconds"},
		{"1:2:3:4", Span{}, "not seconds"},
		{"smpte:0:00:00:00", Span{}, "only Normal Play Time"},
		{"clock:2026-12-01T00:00:00Z", Span{}, "only Normal Play Time"},
		{"npx:1", Span{}, "unknown time format"},
		{"0," + strings.Repeat("9", 40), Span{}, "out of range"},
		{"0,99999999999", Span{}, "out of range"},
	} {
		got, err := ParseTime(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseTime(%q) = %v, %v; want error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseTapQuery(t *testing.T) {
	for _, tc := range []struct {
		q    string
		f    Format
		want TapQuery
		bad  string
	}{
		{"", WAV, TapQuery{}, ""},
		{"t=10%2C20", WAV, TapQuery{Span: Span{10 * time.Second, 20 * time.Second}}, ""},
		{"t=npt%3A1,2", FLAC, TapQuery{Span: Span{time.Second, 2 * time.Second}}, ""},
		{"t=2,4&bitrate=96", Opus, TapQuery{Span: Span{2 * time.Second, 4 * time.Second}, Bitrate: 96}, ""},
		{"bitrate=96", WAV, TapQuery{}, "Opus only"},
		{"bitrate=5", Opus, TapQuery{}, "outside"},
		{"bitrate=96k", Opus, TapQuery{}, "whole number"},
		{"bitrate=+96", Opus, TapQuery{}, "whole number"},
		{"t=1&t=2", WAV, TapQuery{}, "2 times"},
		{"xywh=1,2,3,4", WAV, TapQuery{}, "Unknown query parameter"},
		{"t=%zz", WAV, TapQuery{}, "does not parse"},
		{"t=1;x", WAV, TapQuery{}, "does not parse"},
		{"t=" + strings.Repeat("1", 600), WAV, TapQuery{}, "bytes long"},
	} {
		got, p := ParseTapQuery(tc.q, tc.f)
		if tc.bad != "" {
			if p == nil || p.Status != 400 || !strings.Contains(p.Detail, tc.bad) {
				t.Errorf("ParseTapQuery(%q) = %v, %v; want 400 with %q", tc.q, got, p, tc.bad)
			}
			continue
		}
		if p != nil || got != tc.want {
			t.Errorf("ParseTapQuery(%q) = %v, %v; want %v", tc.q, got, p, tc.want)
		}
		if back, p := ParseTapQuery(got.Encode(), tc.f); p != nil || back != got {
			t.Errorf("Encode(%v) = %q reads back as %v, %v", got, got.Encode(), back, p)
		}
	}
	if p := CheckBitrate(600, 2); p == nil || p.Status != 400 {
		t.Errorf("CheckBitrate(600, 2) = %v", p)
	}
	if p := CheckBitrate(512, 2); p != nil {
		t.Errorf("CheckBitrate(512, 2) = %v", p)
	}
	if p := CheckNoQuery("a=b"); p == nil || p.Status != 400 {
		t.Errorf("CheckNoQuery = %v", p)
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2,4", "npt:0:00:01.5,0:00:02", ",20", "60", "1:60", "smpte:1", "9999999999999999999", "1.0000000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, err := ParseTime(v)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if s.Begin < 0 || s.Begin > MaxBegin || (s.Bounded() && s.End <= s.Begin) || s.End > maxNPT {
			t.Fatalf("ParseTime(%q) = %+v", v, s)
		}
		// The canonical form reads back to the same span.
		if s != (Span{}) {
			back, err := ParseTime(s.Query())
			if err != nil || back != s {
				t.Fatalf("ParseTime(%q) = %+v; %q reads back as %+v, %v", v, s, s.Query(), back, err)
			}
		}
	})
}

func FuzzParseTapQuery(f *testing.F) {
	for _, s := range []string{"t=2,4", "t=10%2C20&bitrate=64", "bitrate=6", "t=&t=", "%"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, q string, opus bool) {
		format := WAV
		if opus {
			format = Opus
		}
		got, p := ParseTapQuery(q, format)
		if p != nil {
			if p.Status != 400 || p.Detail == "" {
				t.Fatalf("ParseTapQuery(%q): %+v", q, p)
			}
			return
		}
		if got.Bitrate != 0 && !opus {
			t.Fatalf("ParseTapQuery(%q): bitrate for WAV", q)
		}
	})
}
