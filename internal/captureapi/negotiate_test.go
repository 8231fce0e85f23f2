// SPDX-License-Identifier: Apache-2.0

package captureapi

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestNegotiate(t *testing.T) {
	const tap = "/v1/audio/sinks/k/audio"
	for _, tc := range []struct {
		accept []string
		want   string
		status int
	}{
		{nil, "wav", 0},
		{[]string{"*/*"}, "wav", 0},
		{[]string{"audio/*"}, "wav", 0},
		{[]string{"audio/flac"}, "flac", 0},
		{[]string{"audio/x-flac"}, "flac", 0},
		{[]string{"audio/ogg"}, "opus", 0},
		{[]string{"audio/ogg; codecs=opus"}, "opus", 0},
		{[]string{`audio/ogg; codecs="opus"`}, "opus", 0},
		{[]string{"AUDIO/OGG;CODECS=OPUS"}, "opus", 0},
		{[]string{"audio/x-wav"}, "wav", 0},
		{[]string{"audio/wave", "audio/flac"}, "wav", 0},
		{[]string{"audio/flac, audio/wav"}, "wav", 0},
		{[]string{"audio/flac, audio/wav;q=0.9"}, "flac", 0},
		{[]string{"audio/*;q=0.5, audio/opus"}, "opus", 0},
		{[]string{"audio/wav;q=0, */*"}, "flac", 0},
		{[]string{"audio/*, audio/wav;q=0, audio/flac;q=0"}, "opus", 0},
		{[]string{"text/html,application/xhtml+xml,*/*;q=0.8"}, "wav", 0},
		{[]string{",, audio/flac ,"}, "flac", 0},
		{[]string{"audio/ogg; codecs=vorbis"}, "", 406},
		{[]string{"audio/mpeg"}, "", 406},
		{[]string{"*/*;q=0"}, "", 406},
		{[]string{"audio"}, "", 400},
		{[]string{"*/wav"}, "", 400},
		{[]string{"audio/wav;q=2"}, "", 400},
		{[]string{"audio/wav;q=0.1234"}, "", 400},
		{[]string{"audio/wav;q=1.001"}, "", 400},
		{[]string{strings.Repeat("audio/mpeg, ", 1000)}, "", 400},
		{[]string{strings.Repeat("a", 5000) + "/b"}, "", 400},
	} {
		got, p := Negotiate(tc.accept, Formats, tap)
		if tc.status != 0 {
			if p == nil || p.Status != tc.status || p.Detail == "" {
				t.Errorf("Negotiate(%q) = %v, %v; want %d", tc.accept, got.Name, p, tc.status)
			}
			if tc.status == 406 && (len(p.Acceptable) != 3 || p.Acceptable[2].Href != tap+".opus" || p.Acceptable[1].Type != "audio/flac") {
				t.Errorf("Negotiate(%q): acceptable %+v", tc.accept, p.Acceptable)
			}
			continue
		}
		if p != nil || got.Name != tc.want {
			t.Errorf("Negotiate(%q) = %v, %v; want %s", tc.accept, got.Name, p, tc.want)
		}
	}
	// A fixed route negotiates among its one format.
	if _, p := Negotiate([]string{"audio/flac"}, []Format{WAV}, tap); p == nil || p.Status != 406 || len(p.Acceptable) != 1 {
		t.Errorf("fixed WAV under Accept audio/flac: %v", p)
	}
}

func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{"audio/flac", "audio/*;q=0.5, audio/ogg;codecs=opus", `a/b;x="1,2", */*;q=0`, "audio/wav;q=0.", strings.Repeat("x/y,", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		got, p := Negotiate([]string{accept}, Formats, "/t")
		if p != nil {
			if (p.Status != 400 && p.Status != 406) || p.Detail == "" {
				t.Fatalf("Negotiate(%q): %+v", accept, p)
			}
			return
		}
		if _, ok := FormatByName(got.Name); !ok {
			t.Fatalf("Negotiate(%q) = %+v", accept, got)
		}
		// Asking for exactly what was chosen chooses it again.
		again, p := Negotiate([]string{got.MediaType}, Formats, "/t")
		if p != nil || again.Name != got.Name {
			t.Fatalf("Negotiate(%q) = %s, but Accept %q gives %v, %v", accept, got.Name, got.MediaType, again.Name, p)
		}
	})
}

func TestProblemRoundTrip(t *testing.T) {
	p := NewProblem(ProblemCaptureBusy, "all %d taps are in use", 4).WithInstance("/v1/audio/sinks/k/audio", "r1")
	rec := httptest.NewRecorder()
	p.Write(rec)
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "5" || rec.Header().Get("Content-Type") != MediaTypeProblem {
		t.Fatalf("written: %d %v", rec.Code, rec.Header())
	}
	back, err := ParseProblem(503, rec.Header().Get("Content-Type"), rec.Body.Bytes())
	if err != nil || back.Type != ProblemCaptureBusy.URI || back.Instance != "/v1/audio/sinks/k/audio#r1" || back.Detail != "all 4 taps are in use" {
		t.Fatalf("ParseProblem = %+v, %v", back, err)
	}
	for _, bad := range []struct {
		ct, body string
	}{
		{"text/plain", `{}`},
		{MediaTypeProblem, `[1]`},
		{MediaTypeProblem, `{"status":500}`},
		{MediaTypeProblem, strings.Repeat(" ", 70<<10) + "{}"},
	} {
		if _, err := ParseProblem(503, bad.ct, []byte(bad.body)); err == nil {
			t.Errorf("ParseProblem(%q, %.20q) accepted", bad.ct, bad.body)
		}
	}
	for _, pt := range ProblemTypes {
		if !strings.HasPrefix(pt.URI, SharedProblemBase) && !strings.HasPrefix(pt.URI, AudioProblemBase) || pt.Status < 400 || pt.Title == "" {
			t.Errorf("problem type %+v", pt)
		}
	}
}
