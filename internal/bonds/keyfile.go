// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// KeyFile is a parsed GLib key file, the format of every file BlueZ keeps
// under /var/lib/bluetooth: "[Group]" header lines, "Key=Value" lines,
// comments starting with '#', and blank lines.
type KeyFile struct {
	// Groups in the order they first appear. GLib merges a group that
	// appears twice into its first appearance; so does ParseKeyFile.
	Groups []*Group
}

// Group is one [Group] of a key file.
type Group struct {
	// Name is the text between the brackets.
	Name string
	// Entries in file order. A key given twice keeps its first position
	// and its last value, as GLib reads it.
	Entries []Entry

	index map[string]int // key -> position in Entries
}

// Entry is one Key=Value line.
type Entry struct {
	// Key is the text before '=', without the spaces around it.
	Key string
	// Value is the raw text after '=' and the spaces after it, escapes
	// (\s \n \t \r \\) not yet undone; see Group.String.
	Value string
	// Line is the 1-based line number of the last assignment.
	Line int
}

// ParseKeyFile reads a GLib key file, as strictly as GLib's
// g_key_file_load_from_data and a little more (a file BlueZ wrote always
// passes). The rules:
//
//   - the data is UTF-8 without NUL bytes (GLib's own writer never emits
//     either, and BlueZ writes through it);
//   - lines end in "\n", and a "\r" before it is dropped;
//   - leading spaces and tabs are ignored; an empty line or one starting
//     with '#' is a comment;
//   - "[Name]", optionally followed by spaces or tabs, starts a group; the
//     name is not empty and holds no '[', ']' or control character;
//   - "Key=Value" sets a key of the current group, with spaces around '='
//     ignored; a key is not empty, holds no control character, and uses
//     brackets only as a locale suffix, "Key[locale]";
//   - a key before the first group, and any other line, is an error.
//
// Errors name the line number and quote the line.
func ParseKeyFile(data []byte) (*KeyFile, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("key file: not UTF-8")
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, fmt.Errorf("key file: contains a NUL byte")
	}
	f := &KeyFile{}
	groups := map[string]*Group{}
	var cur *Group
	for n, line := range strings.Split(string(data), "\n") {
		n++
		line = strings.TrimSuffix(line, "\r")
		text := strings.TrimLeft(line, " \t")
		switch {
		case text == "" || text[0] == '#':
		case text[0] == '[':
			name, ok := groupName(text)
			if !ok {
				return nil, fmt.Errorf("key file line %d: %q is not a valid group header", n, line)
			}
			if cur = groups[name]; cur == nil {
				cur = &Group{Name: name, index: map[string]int{}}
				groups[name] = cur
				f.Groups = append(f.Groups, cur)
			}
		default:
			eq := strings.IndexByte(text, '=')
			if eq <= 0 {
				return nil, fmt.Errorf("key file line %d: %q is not a group, a key=value pair or a comment", n, line)
			}
			key := strings.TrimRight(text[:eq], " \t")
			if !validKey(key) {
				return nil, fmt.Errorf("key file line %d: %q is not a valid key", n, key)
			}
			if cur == nil {
				return nil, fmt.Errorf("key file line %d: key %q comes before the first group", n, key)
			}
			cur.set(key, strings.TrimLeft(text[eq+1:], " \t"), n)
		}
	}
	return f, nil
}

// groupName returns the name of a "[Name]" header line that starts with
// '['.
func groupName(text string) (string, bool) {
	end := strings.IndexByte(text, ']')
	if end < 0 || strings.TrimRight(text[end+1:], " \t") != "" {
		return "", false
	}
	name := text[1:end]
	if name == "" || strings.ContainsAny(name, "[]") || hasControl(name) {
		return "", false
	}
	return name, true
}

// validKey reports whether key is a valid key name, with an optional
// "[locale]" suffix.
func validKey(key string) bool {
	if key == "" || hasControl(key) {
		return false
	}
	if i := strings.IndexByte(key, '['); i >= 0 {
		// Only "name[locale]": one bracket pair, at the end, both parts
		// non-empty.
		return i > 0 && strings.HasSuffix(key, "]") && len(key) > i+2 &&
			!strings.ContainsAny(key[i+1:len(key)-1], "[]") && !strings.ContainsRune(key[:i], ']')
	}
	return !strings.ContainsRune(key, ']')
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

// Group returns the group of that name, or nil.
func (f *KeyFile) Group(name string) *Group {
	for _, g := range f.Groups {
		if g.Name == name {
			return g
		}
	}
	return nil
}

func (g *Group) set(key, value string, line int) {
	if i, ok := g.index[key]; ok {
		g.Entries[i].Value, g.Entries[i].Line = value, line
		return
	}
	g.index[key] = len(g.Entries)
	g.Entries = append(g.Entries, Entry{Key: key, Value: value, Line: line})
}

// Get returns the raw value of key and whether the group has it.
func (g *Group) Get(key string) (string, bool) {
	if g == nil {
		return "", false
	}
	if g.index != nil {
		if i, ok := g.index[key]; ok {
			return g.Entries[i].Value, true
		}
		return "", false
	}
	// A Group built by hand, without the index.
	for _, e := range g.Entries {
		if e.Key == key {
			return e.Value, true
		}
	}
	return "", false
}

// String returns the value of key with GLib's escapes undone (\s space,
// \n, \t, \r, \\), as g_key_file_get_string reads it. A missing key returns
// "" and no error; an unknown escape or a trailing backslash is an error.
func (g *Group) String(key string) (string, error) {
	raw, ok := g.Get(key)
	if !ok || !strings.Contains(raw, `\`) {
		return raw, nil
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			b.WriteByte(raw[i])
			continue
		}
		i++
		if i == len(raw) {
			return "", fmt.Errorf("[%s] %s: value ends in a backslash", g.Name, key)
		}
		switch raw[i] {
		case 's':
			b.WriteByte(' ')
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\':
			b.WriteByte('\\')
		default:
			return "", fmt.Errorf("[%s] %s: unknown escape \\%c", g.Name, key, raw[i])
		}
	}
	return b.String(), nil
}
