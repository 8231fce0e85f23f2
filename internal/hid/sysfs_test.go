// SPDX-License-Identifier: Apache-2.0

package hid

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// materialize builds, in a temporary directory, the sysfs tree described by
// a dump in the form of the fixtures' sysfs-grep-dump: "/sys/PATH: VALUE"
// starts a file, lines without a "/sys/" prefix continue it, and
// "/sys/PATH -> TARGET" is a symlink; '#' lines are comments. It returns the
// directory standing for /sys.
func materialize(t testing.TB, dump string) string {
	t.Helper()
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "sys")
	if err := os.MkdirAll(filepath.Join(root, "bus"), 0o755); err != nil {
		t.Fatal(err)
	}
	local := func(p string) string { return filepath.Join(root, strings.TrimPrefix(p, "/sys/")) }
	var path string
	var content []string
	flush := func() {
		if path == "" {
			return
		}
		body := strings.Join(content, "\n")
		if body != "" {
			body += "\n"
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		path, content = "", nil
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "/sys/") && strings.Contains(line, " -> "):
			flush()
			link, target, _ := strings.Cut(line, " -> ")
			if err := os.MkdirAll(filepath.Dir(local(link)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, local(link)); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(line, "/sys/"):
			flush()
			p, value, ok := strings.Cut(line, ": ")
			if !ok {
				p, ok = strings.CutSuffix(line, ":")
			}
			if !ok {
				t.Fatalf("%s: line %q is neither a file nor a symlink", dump, line)
			}
			path = local(p)
			if value != "" {
				content = []string{value}
			}
		default:
			if path == "" {
				t.Fatalf("%s: continuation line %q before any file", dump, line)
			}
			content = append(content, line)
		}
	}
	flush()
	return root
}
