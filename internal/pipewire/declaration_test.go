// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sampleOutputs() []Output {
	return []Output{
		{Card: 1, Device: 0, PCMID: "USB Audio", Name: "liken.audio.card1-pcm0", Output: "kitchen-usb-0d8c-0014-audio", UseChannelMap: true},
		{Card: 0, Device: 7, PCMID: "HDMI 1", Name: "liken.audio.card0-pcm7", Output: "kitchen-pci-0000-00-1f-3-hdmi-1",
			Channels: 8, Positions: []string{"FL", "FR", "RL", "RR", "FC", "LFE", "SL", "SR"}},
		{Card: 0, Device: 3, PCMID: "HDMI 0", Name: "liken.audio.card0-pcm3", Description: `Kitchen "TV" {HDMI} \ 0`,
			Output: "kitchen-pci-0000-00-1f-3-hdmi-0", Channels: 2, Positions: []string{"FL", "FR"}},
		{Card: 1, Device: 0, Direction: Capture, Name: "liken.audio.card1-pcm0c", Path: "null", Rate: 48000,
			Extra: map[string]string{"node.nick": "mic ü\n\t\u2028", "api.alsa.headroom": "1024"}},
	}
}

func TestDeclarationRoundTrip(t *testing.T) {
	in := sampleOutputs()
	data, err := MarshalDeclaration(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseDeclaration(data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	want := sortOutputs(in)
	if diff := cmp.Diff(out, want); diff != "" {
		t.Errorf("read back (-out +want):\n%s", diff)
	}
	// Sorted by card, device, direction.
	for i, name := range []string{"liken.audio.card0-pcm3", "liken.audio.card0-pcm7", "liken.audio.card1-pcm0", "liken.audio.card1-pcm0c"} {
		if out[i].Name != name {
			t.Errorf("output %d is %s, want %s", i, out[i].Name, name)
		}
	}
	// The same set in another order gives the same bytes.
	rev := append([]Output(nil), in...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	if again, _ := MarshalDeclaration(rev); string(again) != string(data) {
		t.Error("the order of the input changed the text")
	}
}

// The text holds what PipeWire must be given, spelled as the reference
// and infra.md measured it.
func TestDeclarationText(t *testing.T) {
	data, err := MarshalDeclaration(sampleOutputs())
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{
		"\ncontext.objects = [\n",
		`"factory": "adapter",`,
		`"flags": ["nofail"],`,
		`"factory.name": "api.alsa.pcm.sink",`,
		`"factory.name": "api.alsa.pcm.source",`,
		`"media.class": "Audio/Sink",`,
		`"media.class": "Audio/Source",`,
		`"api.alsa.path": "hw:0,3",`,
		`"api.alsa.path": "null",`,
		`"api.alsa.pcm.card": "0",`,
		`"audio.channels": "8",`,
		`"audio.position": "FL,FR,RL,RR,FC,LFE,SL,SR",`,
		`"api.alsa.use-chmap": "true",`,
		`"liken.audio.card": "1",`,
		`"liken.audio.pcm": "7",`,
		`"liken.audio.pcm-id": "HDMI 0",`,
		`"liken.audio.output": "kitchen-pci-0000-00-1f-3-hdmi-0"`,
		`"node.description": "Kitchen \"TV\" {HDMI} \\ 0",`,
		`"node.nick": "mic ü\n\t\u2028"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("declaration lacks %s\n%s", want, text)
		}
	}
	if !strings.HasPrefix(text, "# ") || !strings.HasSuffix(text, "]\n") {
		t.Errorf("declaration does not start with a comment and end with the array:\n%s", text)
	}
}

func TestDeclarationEmpty(t *testing.T) {
	data, err := MarshalDeclaration(nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseDeclaration(data)
	if err != nil || len(out) != 0 {
		t.Errorf("empty declaration read back as %v, %v:\n%s", out, err, data)
	}
}

func TestOutputValidate(t *testing.T) {
	ok := Output{Card: 0, Device: 3, Name: "n"}
	cases := []struct {
		name string
		edit func(*Output)
		want string
	}{
		{"negative card", func(o *Output) { o.Card = -1 }, "card -1 is negative"},
		{"negative device", func(o *Output) { o.Device = -2 }, "PCM device -2 is negative"},
		{"direction", func(o *Output) { o.Direction = 7 }, "unknown direction 7"},
		{"empty name", func(o *Output) { o.Name = "" }, "empty node name"},
		{"space in name", func(o *Output) { o.Name = "a b" }, "white space"},
		{"control in name", func(o *Output) { o.Name = "a\x7fb" }, "control character"},
		{"bad utf8", func(o *Output) { o.PCMID = "\xff" }, "PCM id \"\\xff\": not valid UTF-8"},
		{"nul", func(o *Output) { o.Description = "a\x00b" }, "description \"a\\x00b\": holds a NUL byte"},
		{"rate", func(o *Output) { o.Rate = 768001 }, "rate 768001 Hz"},
		{"channels", func(o *Output) { o.Channels = 65 }, "65 channels"},
		{"positions count", func(o *Output) { o.Channels, o.Positions = 2, []string{"FL"} }, "1 positions for 2 channels"},
		{"positions without count", func(o *Output) { o.Positions = []string{"FL"} }, "1 positions for 0 channels"},
		{"position name", func(o *Output) { o.Channels, o.Positions = 2, []string{"FL", "fr"} }, `position "fr"`},
		{"position comma", func(o *Output) { o.Channels, o.Positions = 1, []string{"FL,FR"} }, `position "FL,FR"`},
		{"chmap and positions", func(o *Output) { o.Channels, o.Positions, o.UseChannelMap = 1, []string{"MONO"}, true }, "exclude each other"},
		{"extra key", func(o *Output) { o.Extra = map[string]string{"a b": "x"} }, `key "a b"`},
		{"extra reserved", func(o *Output) { o.Extra = map[string]string{"node.name": "x"} }, `"node.name" is one the declaration writes`},
		{"extra value", func(o *Output) { o.Extra = map[string]string{"a": "\x00"} }, "NUL"},
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		o := ok
		c.edit(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

func TestCheckOutputsSet(t *testing.T) {
	a := Output{Card: 0, Device: 3, Name: "a"}
	if err := CheckOutputs([]Output{a, {Card: 0, Device: 4, Name: "a"}}); err == nil || !strings.Contains(err.Error(), `node name "a" is also output 0's`) {
		t.Errorf("duplicate name: %v", err)
	}
	if err := CheckOutputs([]Output{a, {Card: 0, Device: 3, Name: "b"}}); err == nil || !strings.Contains(err.Error(), "declared twice") {
		t.Errorf("duplicate PCM: %v", err)
	}
	if err := CheckOutputs([]Output{a, {Card: 0, Device: 3, Direction: Capture, Name: "b"}}); err != nil {
		t.Errorf("playback and capture of one PCM device: %v", err)
	}
}

func TestParseDeclarationRefuses(t *testing.T) {
	good, err := MarshalDeclaration([]Output{{Card: 0, Device: 3, Name: "n"}})
	if err != nil {
		t.Fatal(err)
	}
	replace := func(old, new string) string {
		if !strings.Contains(string(good), old) {
			t.Fatalf("%q not in the declaration", old)
		}
		return strings.Replace(string(good), old, new, 1)
	}
	cases := map[string]struct{ text, want string }{
		"empty":          {"", "no context.objects"},
		"other section":  {"context.properties = {}", "no context.objects"},
		"no equals":      {"context.objects [ ]", "not followed by '='"},
		"not array":      {"context.objects = { }", "not an array"},
		"bare spa-json":  {"context.objects = [ { factory = adapter args = { node.name = n } } ]", "invalid character"},
		"truncated":      {string(good[:len(good)-10]), "unexpected EOF"},
		"trailing":       {string(good) + "context.modules = []\n", "text after"},
		"unknown field":  {replace(`"flags"`, `"flagz"`), "unknown field"},
		"factory":        {replace(`"factory": "adapter"`, `"factory": "spa-node-factory"`), `factory "spa-node-factory"`},
		"spa factory":    {replace(`api.alsa.pcm.sink`, `support.null-audio-sink`), "not an ALSA PCM factory"},
		"class":          {replace(`"Audio/Sink"`, `"Audio/Source"`), "does not match"},
		"number":         {replace(`"liken.audio.pcm": "3"`, `"liken.audio.pcm": "03"`), "not a decimal number"},
		"alsa card":      {replace(`"api.alsa.pcm.card": "0"`, `"api.alsa.pcm.card": "1"`), "differs from"},
		"no name":        {replace(`"node.name": "n",`, ``), "no node.name"},
		"non-string":     {replace(`"liken.audio.pcm": "3"`, `"liken.audio.pcm": 3`), "cannot unmarshal number"},
		"bad chmap":      {replace(`"liken.audio.card"`, `"api.alsa.use-chmap": "yes", "liken.audio.card"`), "not true or false"},
		"bad positions":  {replace(`"liken.audio.card"`, `"audio.channels": "3", "audio.position": "FL,,FR", "liken.audio.card"`), `position ""`},
		"empty path":     {replace(`"api.alsa.path": "hw:0,3"`, `"api.alsa.path": ""`), "empty api.alsa.path"},
		"not an array 2": {"context.objects = null", "not an array"},
	}
	for name, c := range cases {
		_, err := ParseDeclaration([]byte(c.text))
		if err == nil || !errors.Is(err, ErrNotDeclaration) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrNotDeclaration with %q", name, err, c.want)
		}
	}
	// Comments and blank lines around the array are fine.
	text := "\n# one\n\n  # two\n" + strings.TrimPrefix(string(good), declarationHeader) + "# after\n\n"
	if _, err := ParseDeclaration([]byte(text)); err != nil {
		t.Errorf("comments: %v", err)
	}
}

func TestWriteDeclaration(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pipewire.conf.d")
	path, err := WriteDeclaration(dir, sampleOutputs())
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, DeclarationFile) {
		t.Errorf("path %s", path)
	}
	for p, mode := range map[string]os.FileMode{dir: os.ModeDir | 0o755, path: 0o644} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != mode {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), mode)
		}
	}
	got, err := ReadDeclaration(path)
	if err != nil || !reflect.DeepEqual(got, sortOutputs(sampleOutputs())) {
		t.Errorf("read back %+v, %v", got, err)
	}
	before, _ := os.ReadFile(path)

	// A bad set is refused and the file stays as it was.
	bad := append(sampleOutputs(), Output{Card: 9, Device: 0, Name: "liken.audio.card0-pcm3"})
	if _, err := WriteDeclaration(dir, bad); err == nil || !strings.Contains(err.Error(), "also output") {
		t.Errorf("bad set: %v", err)
	}
	// A rewrite replaces the file whole and leaves no temporary file.
	if _, err := WriteDeclaration(dir, sampleOutputs()[:1]); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if string(after) == string(before) {
		t.Error("rewrite did not change the file")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %v, want the declaration alone", entries)
	}

	if _, err := ReadDeclaration(filepath.Join(dir, "missing.conf")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v, want fs.ErrNotExist", err)
	}
	if err := os.WriteFile(path, []byte("context.objects = [ garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDeclaration(path); !errors.Is(err, ErrNotDeclaration) || !strings.Contains(err.Error(), path) {
		t.Errorf("garbage: %v, want ErrNotDeclaration naming the file", err)
	}
}

// A directory that cannot be written to fails the write with the path in
// the error, and the old declaration survives.
func TestWriteDeclarationUnwritable(t *testing.T) {
	dir := t.TempDir()
	path, err := WriteDeclaration(dir, sampleOutputs())
	if err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteDeclaration(filepath.Join(blocker, "sub"), sampleOutputs()); err == nil || !strings.Contains(err.Error(), blocker) {
		t.Errorf("write under a file: %v", err)
	}
	if _, err := ReadDeclaration(path); err != nil {
		t.Errorf("old declaration: %v", err)
	}
}

// A withheld output is written in its own section, after the objects
// PipeWire reads, and reads back last with its reason; a reason in the
// wrong section or a section with an output lacking one is refused.
func TestDeclarationWithheld(t *testing.T) {
	in := sampleOutputs()
	in[2].Withheld = "the monitor's ELD lists no audio format"
	data, err := MarshalDeclaration(in)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	live, rest, ok := strings.Cut(text, WithheldKey+" = [")
	if !ok || strings.Contains(live, in[2].Name) || !strings.Contains(rest, `"liken.audio.withheld": "the monitor's ELD lists no audio format"`) {
		t.Fatalf("withheld output not in its own section:\n%s", text)
	}
	out, err := ParseDeclaration(data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if len(out) != 4 || out[3].Name != in[2].Name || out[3].Withheld != in[2].Withheld || out[0].Withheld != "" {
		t.Errorf("read back as %+v", out)
	}
	for name, bad := range map[string]string{
		"reason among live objects": strings.Replace(text, `"liken.audio.card": "0",`, `"liken.audio.withheld": "x", "liken.audio.card": "0",`, 1),
		"no reason in the section":  strings.Replace(text, ",\n      \"liken.audio.withheld\": \"the monitor's ELD lists no audio format\"", "", 1),
		"section twice":             text + WithheldKey + " = []\n",
	} {
		if bad == text {
			t.Fatalf("%s: the text did not change", name)
		}
		if _, err := ParseDeclaration([]byte(bad)); !errors.Is(err, ErrNotDeclaration) {
			t.Errorf("%s: %v, want ErrNotDeclaration", name, err)
		}
	}
	o := in[2]
	o.Withheld = "two\nlines"
	if err := o.Validate(); err == nil {
		t.Error("a reason of two lines passed Validate")
	}
}
