// SPDX-License-Identifier: Apache-2.0

package pwconf

import (
	"reflect"
	"strings"
	"testing"
)

// render prints an Object as SPA-JSON that Parse reads back to the same
// Object: every key and string quoted, with the escapes quoted reads.
func render(b *strings.Builder, v any) {
	switch v := v.(type) {
	case Object:
		b.WriteString("{ ")
		renderMembers(b, v)
		b.WriteString("} ")
	case Array:
		b.WriteString("[ ")
		for _, e := range v {
			render(b, e)
		}
		b.WriteString("] ")
	case string:
		b.WriteByte('"')
		for i := 0; i < len(v); i++ {
			switch c := v[i]; c {
			case '"', '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case '\n':
				b.WriteString(`\n`)
			case '\t':
				b.WriteString(`\t`)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteString(`" `)
	}
}

func renderMembers(b *strings.Builder, o Object) {
	for _, m := range o {
		render(b, m.Key)
		b.WriteString("= ")
		render(b, m.Value)
		b.WriteByte('\n')
	}
}

// FuzzParse: no input panics; an accepted file holds only Objects, Arrays
// and strings, reads back the same when printed again, and Modules and
// WirePlumberPipeWireModules read it without panicking.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"# a comment\ncontext.properties = {\n    log.level = 2   # trailing\n    \"quoted.key\": \"a \\\"b\\\" # not a comment\"\n}\nlist = [ one, \"two\" { k = v } [ nested ] ]\nempty = {}\n",
		"context.modules = [\n  { name = libpipewire-module-rt args = { nice.level = -11 } flags = [ ifexists nofail ] }\n  { name = libpipewire-module-protocol-native }\n]\n",
		"wireplumber.components = [ { name = libpipewire-module-client-node, type = pw-module } ]\n",
		"context.objects = [ { factory = adapter args = { node.name = \"hdmi\\tout\" audio.position = [ FL FR ] } } ]",
		"a = { b = c", "a = \"open", "{ x = y } = z",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, err := Parse(data)
		if err != nil {
			if obj != nil {
				t.Fatalf("error %v with a result", err)
			}
			return
		}
		var b strings.Builder
		renderMembers(&b, obj)
		again, err := Parse([]byte(b.String()))
		if err != nil {
			t.Fatalf("printed form does not parse: %v\n%s", err, b.String())
		}
		if !reflect.DeepEqual(again, obj) {
			t.Fatalf("printed form reads back differently:\n%#v\n%#v\n%s", obj, again, b.String())
		}
		_, _ = Modules(obj)
		_, _ = WirePlumberPipeWireModules(obj)
	})
}
