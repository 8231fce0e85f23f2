// SPDX-License-Identifier: Apache-2.0

package fakesys

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var grepDumpLine = regexp.MustCompile(`^/sys/(\S*?):(?: (.*))?$`)

// LoadGrepDump writes under root the files of a dump in the shape
// `grep -r . /sys/...` prints: "/sys/PATH: VALUE" starts a file (VALUE
// may be absent for an empty one), and a line without the /sys/ prefix
// continues the file above. Each file ends in a newline unless it is
// empty. A continuation line before any path is an error naming it.
func LoadGrepDump(dump []byte, root string) error {
	files := map[string][]string{}
	var order []string
	last := ""
	for _, line := range strings.Split(strings.TrimRight(string(dump), "\n"), "\n") {
		if m := grepDumpLine.FindStringSubmatch(line); m != nil {
			last = m[1]
			order = append(order, last)
			files[last] = nil
			if m[2] != "" {
				files[last] = []string{m[2]}
			}
			continue
		}
		if last == "" {
			return fmt.Errorf("fakesys: grep dump: %q before any path", line)
		}
		files[last] = append(files[last], line)
	}
	for _, p := range order {
		if !filepath.IsLocal(p) {
			return fmt.Errorf("fakesys: grep dump: %q leaves the root", p)
		}
		path := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		content := strings.Join(files[p], "\n")
		if content != "" {
			content += "\n"
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// LoadGrepDumpFile is LoadGrepDump of the file at path; an error names
// the file.
func LoadGrepDumpFile(path, root string) error {
	data, err := os.ReadFile(path)
	if err == nil {
		err = LoadGrepDump(data, root)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
