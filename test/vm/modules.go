// SPDX-License-Identifier: Apache-2.0

package vm

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ModuleDeps is a kernel's modules.dep (written by depmod): for each
// module, its file relative to /lib/modules/<release> and the files of the
// modules it needs, nearest first.
type ModuleDeps struct {
	// Files maps a module name, with '-' spelled '_' as the kernel does,
	// to its file ("kernel/sound/drivers/snd-dummy.ko.xz").
	Files map[string]string
	// Needs maps a module's file to the files of its dependencies.
	Needs map[string][]string
	// Builtin holds the names of modules compiled into the kernel image
	// (modules.builtin), which need no file.
	Builtin map[string]bool
}

// ModuleName is the kernel's name for a module given by name or by file:
// the base name without .ko and compression suffix, '-' as '_'.
func ModuleName(s string) string {
	s = filepath.Base(s)
	if i := strings.Index(s, ".ko"); i >= 0 {
		s = s[:i]
	}
	return strings.ReplaceAll(s, "-", "_")
}

// ParseModulesDep reads modules.dep ("file: dep dep ...", one module a
// line) and, when builtin is not nil, modules.builtin (one file a line).
func ParseModulesDep(dep, builtin io.Reader) (*ModuleDeps, error) {
	m := &ModuleDeps{Files: map[string]string{}, Needs: map[string][]string{}, Builtin: map[string]bool{}}
	sc := bufio.NewScanner(dep)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		file, deps, ok := strings.Cut(line, ":")
		if !ok || file == "" {
			return nil, fmt.Errorf("modules.dep line %d: %q is not \"file: deps\"", n, line)
		}
		m.Files[ModuleName(file)] = file
		m.Needs[file] = strings.Fields(deps)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("modules.dep: %w", err)
	}
	if builtin != nil {
		sc := bufio.NewScanner(builtin)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				m.Builtin[ModuleName(line)] = true
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("modules.builtin: %w", err)
		}
	}
	return m, nil
}

// LoadModuleDeps reads modules.dep and modules.builtin from a kernel's
// module directory (/lib/modules/<release>, after depmod).
func LoadModuleDeps(dir string) (*ModuleDeps, error) {
	dep, err := os.Open(filepath.Join(dir, "modules.dep"))
	if err != nil {
		return nil, err
	}
	defer dep.Close()
	builtin, err := os.Open(filepath.Join(dir, "modules.builtin"))
	if err != nil {
		return nil, err
	}
	defer builtin.Close()
	return ParseModulesDep(dep, builtin)
}

// Closure returns the files of the named modules and of everything they
// need, sorted. A built-in module adds nothing; a name that is neither a
// module nor built in is an error, so a typo in a guest's module list
// fails the build of the initramfs instead of a test inside the guest.
func (m *ModuleDeps) Closure(names []string) ([]string, error) {
	seen := map[string]bool{}
	var visit func(file string)
	visit = func(file string) {
		if seen[file] {
			return
		}
		seen[file] = true
		for _, d := range m.Needs[file] {
			visit(d)
		}
	}
	for _, n := range names {
		name := ModuleName(n)
		if file, ok := m.Files[name]; ok {
			visit(file)
			continue
		}
		if !m.Builtin[name] {
			return nil, fmt.Errorf("module %s: neither in modules.dep nor built in", n)
		}
	}
	files := make([]string, 0, len(seen))
	for f := range seen {
		files = append(files, f)
	}
	slices.Sort(files)
	return files, nil
}
