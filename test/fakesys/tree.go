// SPDX-License-Identifier: Apache-2.0

package fakesys

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// BuildTree lays out under root what a manifest says, one entry a line
// (blank lines and lines starting with # are skipped):
//
//	dir <path>
//	file <path> <content>   the rest of the line, or a Go-quoted string; a newline is added
//	link <path> <target>    a target starting with / is taken from root and
//	                        written relative, as sysfs writes its links
//
// Paths are relative to root; parents are created. A path that would leave
// root, or a line of another shape, is an error naming the line.
func BuildTree(manifest []byte, root string) error {
	sc := bufio.NewScanner(bytes.NewReader(manifest))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, " ", 3)
		if len(fields) < 2 || !filepath.IsLocal(fields[1]) {
			return fmt.Errorf("fakesys: manifest line %d: %q", n, line)
		}
		path := filepath.Join(root, fields[1])
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		var err error
		switch {
		case fields[0] == "dir":
			err = os.MkdirAll(path, 0o755)
		case fields[0] == "file" && len(fields) == 3:
			content := fields[2]
			if strings.HasPrefix(content, `"`) {
				if content, err = strconv.Unquote(content); err != nil {
					return fmt.Errorf("fakesys: manifest line %d: %w", n, err)
				}
			}
			err = os.WriteFile(path, []byte(content+"\n"), 0o644)
		case fields[0] == "link" && len(fields) == 3:
			target := fields[2]
			if abs, ok := strings.CutPrefix(target, "/"); ok {
				if !filepath.IsLocal(abs) {
					return fmt.Errorf("fakesys: manifest line %d: target leaves the root", n)
				}
				if target, err = filepath.Rel(filepath.Dir(path), filepath.Join(root, abs)); err != nil {
					return err
				}
				if err := os.MkdirAll(filepath.Join(root, abs), 0o755); err != nil {
					return err
				}
			}
			err = os.Symlink(target, path)
		default:
			return fmt.Errorf("fakesys: manifest line %d: %q", n, line)
		}
		if err != nil {
			return fmt.Errorf("fakesys: manifest line %d: %w", n, err)
		}
	}
	return sc.Err()
}
