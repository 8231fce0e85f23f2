// SPDX-License-Identifier: Apache-2.0

package pwconf

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	src := `# a comment
context.properties = {
    log.level = 2   # trailing comment
    "quoted.key": "a \"b\" # not a comment"
}
list = [ one, "two" { k = v } [ nested ] ]
empty = {}
`
	got, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := Object{
		{Key: "context.properties", Value: Object{{Key: "log.level", Value: "2"}, {Key: "quoted.key", Value: `a "b" # not a comment`}}},
		{Key: "list", Value: Array{"one", "two", Object{{Key: "k", Value: "v"}}, Array{"nested"}}},
		{Key: "empty", Value: Object(nil)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{`a = { b = c`, `a = [ b`, `a = "open`, `a = }`, `a`, `{ x = y } = z`} {
		if _, err := Parse([]byte(src)); err == nil {
			t.Errorf("%q: no error", src)
		}
	}
}

func TestModules(t *testing.T) {
	conf, err := Parse([]byte(`context.modules = [
  { name = libpipewire-module-rt flags = [ ifexists nofail ] }
  { name = libpipewire-module-protocol-native }
  { name = libpipewire-module-portal flags = [ nofail ] condition = [ { module.portal = !false } ] }
  { name = libpipewire-module-x flags = [ ifexists ] }
]`))
	if err != nil {
		t.Fatal(err)
	}
	mods, err := Modules(conf)
	if err != nil {
		t.Fatal(err)
	}
	var required []string
	for _, m := range mods {
		if m.Required() {
			required = append(required, m.Name)
		}
	}
	if len(mods) != 4 || !slices.Equal(required, []string{"libpipewire-module-protocol-native"}) {
		t.Fatalf("modules %v, required %v", mods, required)
	}
	if _, err := Modules(Object{{Key: "context.modules", Value: "x"}}); err == nil {
		t.Error("a string as context.modules: no error")
	}
}

// The stock configuration PipeWire 1.4 installs parses, and it loads the
// session manager module without a fallback: pruning it stops PipeWire.
func TestStockConfiguration(t *testing.T) {
	data, err := os.ReadFile("/usr/share/pipewire/pipewire.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	mods, err := Modules(conf)
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]bool{}
	for _, m := range mods {
		required[m.Name] = m.Required()
	}
	if !required["libpipewire-module-session-manager"] || !required["libpipewire-module-protocol-native"] || required["libpipewire-module-rt"] {
		t.Fatalf("required: %v", required)
	}
	wp, err := os.ReadFile("/usr/share/wireplumber/wireplumber.conf")
	if err != nil {
		t.Fatal(err)
	}
	wconf, err := Parse(wp)
	if err != nil {
		t.Fatal(err)
	}
	names, err := WirePlumberPipeWireModules(wconf)
	if err != nil || !slices.Contains(names, "libpipewire-module-adapter") || slices.ContainsFunc(names, func(n string) bool { return !strings.HasPrefix(n, "libpipewire-module-") }) {
		t.Fatalf("WirePlumber's PipeWire modules %v, %v", names, err)
	}
}
