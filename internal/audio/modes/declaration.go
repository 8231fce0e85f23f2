// SPDX-License-Identifier: Apache-2.0

package modes

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// declarationAfter reports whether the declaration at path was modified
// after start, the moment the running PipeWire was forked: then that
// PipeWire may have read an older declaration, and must start again to
// read this one. Any state the check cannot read counts as "loaded" (no
// file, a stat error, a modification time in the future, which no write
// made by now could carry), so that a confusing file can never make
// PipeWire restart without end; why says which it was, for the log.
func declarationAfter(path string, start, now time.Time) (after bool, why string) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, "no declaration"
	}
	if err != nil {
		return false, "declaration unreadable: " + err.Error()
	}
	mtime := fi.ModTime()
	if mtime.After(now) {
		return false, "declaration modified in the future (" + mtime.UTC().Format(time.RFC3339Nano) + "); ignored"
	}
	if !mtime.After(start) {
		return false, "declaration loaded"
	}
	return true, "declaration modified at " + mtime.UTC().Format(time.RFC3339Nano) +
		", after PipeWire started at " + start.UTC().Format(time.RFC3339Nano)
}

// watchDeclaration sends on wake (never blocking: one pending wake is
// enough) whenever the declaration at path may have changed: on every
// inotify event that names it in its directory, which is watched rather
// than the file because a writer that replaces the file by rename leaves
// a watch on the old inode blind, and every backstop period, which also
// retries a watch that could not be set (the directory did not exist
// yet). It runs until done is closed; logf reports a watch that cannot be
// set.
func watchDeclaration(path string, backstop time.Duration, wake chan<- struct{}, done <-chan struct{}, logf func(string, ...any)) {
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	dir, name := filepath.Dir(path), filepath.Base(path)
	var events <-chan fsnotify.Event
	var errs <-chan error
	w, err := fsnotify.NewWatcher()
	if err != nil {
		logf("cannot watch %s, checking it every %v only: %v", path, backstop, err)
	} else {
		defer w.Close()
		events, errs = w.Events, w.Errors
	}
	watching, failed := false, false
	watch := func() {
		if w == nil || watching {
			return
		}
		if err := w.Add(dir); err != nil {
			if !failed { // once, not every backstop period
				logf("cannot watch %s yet, checking it every %v: %v", dir, backstop, err)
			}
			failed = true
			return
		}
		if failed {
			logf("watching %s", dir)
		}
		watching, failed = true, false
	}
	watch()
	tick := time.NewTicker(backstop)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if filepath.Base(ev.Name) == name {
				poke()
			}
			if ev.Name == dir && ev.Has(fsnotify.Remove|fsnotify.Rename) {
				watching = false
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			// An overflowed queue lost events: check now.
			logf("watching %s: %v", dir, err)
			poke()
		case <-tick.C:
			watch()
			poke()
		}
	}
}
