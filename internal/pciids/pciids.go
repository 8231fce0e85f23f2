// SPDX-License-Identifier: Apache-2.0

// Package pciids looks up the names of PCI vendors and devices in the PCI
// ID database (pci.ids, https://pci-ids.ucw.cz/, as Debian's pci.ids
// package installs it at /usr/share/misc/pci.ids).
//
// The database is about 1.3 MB of text and a driver needs a handful of its
// names, so a lookup streams the file and keeps only what it found, and
// results are cached; github.com/jaypipes/pcidb parses the whole database
// into memory (several MiB held for the process's life), which a
// DaemonSet on a small machine should not pay for.
package pciids

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
)

// maxLine bounds one line of the database, in bytes; a longer line fails
// the lookup rather than growing a buffer without limit.
const maxLine = 4096

// Names are what the database says about one PCI vendor and device ID
// pair. A field is empty when the database does not list it.
type Names struct {
	Vendor string // e.g. "Intel Corporation"
	Device string // e.g. "Cannon Lake PCH cAVS"
}

// Lookup reads a database in pci.ids syntax from r until it has found
// vendor and, under it, device: vendor lines are four lowercase hex
// digits, two spaces and the name; device lines are the same after one
// tab; subsystem lines (two tabs) and comments (#) are skipped; the
// device class section (lines from "C ") ends the vendor list. The error
// is r's, or says which line is longer than 4096 bytes.
func Lookup(r io.Reader, vendor, device uint16) (Names, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), maxLine)
	var out Names
	inVendor := false
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		switch {
		case text == "" || text[0] == '#':
			continue
		case strings.HasPrefix(text, "\t\t"):
			continue
		case text[0] == '\t':
			if !inVendor {
				continue
			}
			if id, name, ok := entry(text[1:]); ok && id == device {
				out.Device = name
				return out, nil
			}
		case strings.HasPrefix(text, "C "):
			return out, nil
		default:
			id, name, ok := entry(text)
			if inVendor {
				// The vendor's device list ended without the device.
				return out, nil
			}
			if ok && id == vendor {
				inVendor = true
				out.Vendor = name
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return out, fmt.Errorf("line %d of the PCI ID database is longer than %d bytes", line+1, maxLine)
		}
		return out, err
	}
	return out, nil
}

// entry splits "xxxx  name" into its ID and name.
func entry(s string) (uint16, string, bool) {
	if len(s) < 6 || s[4] != ' ' {
		return 0, "", false
	}
	id, err := strconv.ParseUint(s[:4], 16, 16)
	if err != nil {
		return 0, "", false
	}
	name := strings.TrimSpace(s[5:])
	return uint16(id), name, name != ""
}

// DB is the database at one path, read on demand. Its methods are safe
// for concurrent use.
type DB struct {
	path string

	mu    sync.Mutex
	cache map[uint32]Names
	err   error // the last lookup's, reported once through Err
}

// Open returns the database at path. The file is read only by lookups,
// so a missing file is not an error here: lookups then find nothing and
// Err says why.
func Open(path string) *DB {
	return &DB{path: path, cache: map[uint32]Names{}}
}

// Names returns what the database lists for vendor and device; found is
// false when it lists neither, or the file cannot be read (Err then says
// why). A result is cached, misses included, for the DB's life.
func (db *DB) Names(vendor, device uint16) (names Names, found bool) {
	if db == nil {
		return Names{}, false
	}
	key := uint32(vendor)<<16 | uint32(device)
	db.mu.Lock()
	defer db.mu.Unlock()
	if n, ok := db.cache[key]; ok {
		return n, n != Names{}
	}
	f, err := os.Open(db.path)
	if err != nil {
		db.err = fmt.Errorf("the PCI ID database: %w", err)
		return Names{}, false
	}
	defer f.Close()
	n, err := Lookup(f, vendor, device)
	if err != nil {
		db.err = fmt.Errorf("the PCI ID database %s: %w", db.path, err)
		return Names{}, false
	}
	db.cache[key] = n
	return n, n != Names{}
}

// Err returns, and forgets, the error of the last lookup that could not
// read the database; nil when every lookup since the last call could.
func (db *DB) Err() error {
	if db == nil {
		return nil
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	err := db.err
	db.err = nil
	return err
}
