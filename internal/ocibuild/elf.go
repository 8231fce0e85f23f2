// SPDX-License-Identifier: Apache-2.0

package ocibuild

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// closure adds the program interpreter and every shared library the ELF
// file at imagePath (read from hostPath) needs, found as the loader finds
// them; each library brings its own closure in turn. A file that is not
// ELF has none; an ELF file for another machine, or a library found
// nowhere, is an error. The machine is the contents' Arch.
func (c *Contents) closure(imagePath, hostPath string) error {
	if c.scanned[hostPath] {
		return nil
	}
	c.scanned[hostPath] = true
	isELF, err := hasELFMagic(hostPath)
	if err != nil || !isELF {
		return err
	}
	f, err := elf.Open(hostPath)
	if err != nil {
		return fmt.Errorf("%s: %w", imagePath, err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Machine != c.arch.Machine {
		return fmt.Errorf("%s: %v %v, not a 64-bit %v ELF file (%s)", imagePath, f.Class, f.Machine, c.arch.Machine, c.arch.Name)
	}
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_INTERP {
			continue
		}
		raw, err := io.ReadAll(prog.Open())
		if err != nil {
			return fmt.Errorf("%s: program interpreter: %w", imagePath, err)
		}
		if _, err := c.walk(string(bytes.TrimRight(raw, "\x00")), true, 0); err != nil {
			return fmt.Errorf("%s: program interpreter: %w", imagePath, err)
		}
	}
	needed, err := f.DynString(elf.DT_NEEDED)
	if err != nil {
		return fmt.Errorf("%s: %w", imagePath, err)
	}
	dirs, err := searchDirs(f, path.Dir(imagePath), c.arch.LibraryDirs)
	if err != nil {
		return fmt.Errorf("%s: %w", imagePath, err)
	}
	for _, lib := range needed {
		if err := c.addLibrary(lib, dirs); err != nil {
			return fmt.Errorf("%s needs %s: %w", imagePath, lib, err)
		}
	}
	return nil
}

// addLibrary adds the first file named lib in dirs that is a 64-bit ELF
// file for the contents' machine, as the loader skips candidates for
// another one.
func (c *Contents) addLibrary(lib string, dirs []string) error {
	if strings.Contains(lib, "/") {
		return errors.New("a DT_NEEDED entry with a slash is not supported")
	}
	for _, dir := range dirs {
		candidate := path.Join(dir, lib)
		real, err := c.walk(candidate, false, 0)
		if err != nil {
			continue
		}
		if ok, err := isELFFor(c.host(real), c.arch.Machine); err != nil || !ok {
			continue
		}
		_, err = c.walk(candidate, true, 0)
		return err
	}
	return fmt.Errorf("not found in %s", strings.Join(dirs, ":"))
}

// searchDirs is the loader's search path for the object f, whose image
// directory is origin: DT_RPATH when there is no DT_RUNPATH, DT_RUNPATH,
// then the platform's default directories. $ORIGIN is expanded; the other dynamic
// string tokens are refused, as no object here uses them.
func searchDirs(f *elf.File, origin string, defaults []string) ([]string, error) {
	runpath, err := f.DynString(elf.DT_RUNPATH)
	if err != nil {
		return nil, err
	}
	var dirs []string
	if len(runpath) == 0 {
		rpath, err := f.DynString(elf.DT_RPATH)
		if err != nil {
			return nil, err
		}
		runpath = rpath
	}
	for _, list := range runpath {
		for _, dir := range strings.Split(list, ":") {
			dir = strings.NewReplacer("${ORIGIN}", origin, "$ORIGIN", origin).Replace(dir)
			if strings.Contains(dir, "$") {
				return nil, fmt.Errorf("run path %q: only $ORIGIN is supported", list)
			}
			if dir != "" && path.IsAbs(dir) {
				dirs = append(dirs, dir)
			}
		}
	}
	return append(dirs, defaults...), nil
}

// hasELFMagic reports whether the file starts with the ELF magic number.
func hasELFMagic(hostPath string) (bool, error) {
	f, err := os.Open(hostPath)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		return false, nil // shorter than a magic number: not ELF
	}
	return string(magic[:]) == elf.ELFMAG, nil
}

// isELFFor reports whether the file is a 64-bit ELF file for machine.
func isELFFor(hostPath string, machine elf.Machine) (bool, error) {
	f, err := elf.Open(hostPath)
	if err != nil {
		var formatErr *elf.FormatError
		if errors.As(err, &formatErr) {
			return false, nil
		}
		return false, err
	}
	defer f.Close()
	return f.Class == elf.ELFCLASS64 && f.Machine == machine, nil
}
