// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"

	"github.com/fsnotify/fsnotify"

	"github.com/liken-sh/operators/internal/atomicfile"
)

// Opener opens a card's control interface by card number. [DevOpener]
// opens the kernel's nodes; [DumpDir] serves recorded cards. The operator
// and declare take an Opener so that the same code runs on a node, in the
// VM tier and on recorded hardware.
type Opener interface {
	Open(card int) (Control, error)
}

// DevOpener opens /dev/snd/controlC<N> under Root with OpenControl.
type DevOpener struct {
	// Root is the /dev/snd directory; "" means DevSndRoot.
	Root string
}

// Open implements Opener.
func (o DevOpener) Open(card int) (Control, error) {
	root := o.Root
	if root == "" {
		root = DevSndRoot
	}
	c, err := OpenControl(ControlPath(root, card))
	if err != nil {
		return nil, err
	}
	return c, nil
}

// DumpDir serves recorded cards from a directory holding one dump per card,
// card<N>.json (DumpPath): the recorded counterpart of /dev/snd. A card's
// file is read when the card is first opened; Reload and Watch bring later
// edits of the file to the open handles as control events, so a demo
// changes "hardware" by rewriting a file (WriteDump).
type DumpDir struct {
	dir   string
	mu    sync.Mutex
	cards map[int]*Recorded
}

// NewDumpDir serves the dumps in dir.
func NewDumpDir(dir string) *DumpDir {
	return &DumpDir{dir: dir, cards: map[int]*Recorded{}}
}

// Dir is the directory served.
func (d *DumpDir) Dir() string { return d.dir }

var dumpFileName = regexp.MustCompile(`^card([0-9]{1,3})\.json$`)

// DumpPath is card's dump file in dir: dir/card<N>.json.
func DumpPath(dir string, card int) string {
	return filepath.Join(dir, "card"+strconv.Itoa(card)+".json")
}

// ReadDump reads and validates a dump file.
func ReadDump(path string) (*Dump, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d, err := DecodeDump(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// WriteDump writes d to DumpPath(dir, d.Card) atomically (a temporary file
// renamed over it), so a watching DumpDir never reads half a file. d is
// validated first; an invalid dump writes nothing.
func WriteDump(dir string, d *Dump) error {
	if err := d.Validate(); err != nil {
		return err
	}
	data, err := d.Encode()
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(DumpPath(dir, d.Card), data, 0o600)
}

// Recorded returns the card served for card number card, reading its file
// on first use. A missing file wraps fs.ErrNotExist (the card does not
// exist, as opening a missing control node fails); a file whose card
// number differs from its name is an error.
func (d *DumpDir) Recorded(card int) (*Recorded, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r, ok := d.cards[card]; ok {
		return r, nil
	}
	dump, err := ReadDump(DumpPath(d.dir, card))
	if err != nil {
		return nil, err
	}
	if dump.Card != card {
		return nil, fmt.Errorf("%s holds card %d", DumpPath(d.dir, card), dump.Card)
	}
	r, err := NewRecorded(dump)
	if err != nil {
		return nil, err
	}
	d.cards[card] = r
	return r, nil
}

// Open implements Opener.
func (d *DumpDir) Open(card int) (Control, error) {
	r, err := d.Recorded(card)
	if err != nil {
		return nil, err
	}
	return r.Open(), nil
}

// Reload reads card's file again and replaces the served card with it
// (Recorded.Replace: subscribers get the differences as events). A card not
// opened yet is left to be read on first use. A file that is missing or
// does not validate changes nothing and is returned as the error.
func (d *DumpDir) Reload(card int) error {
	d.mu.Lock()
	r, ok := d.cards[card]
	d.mu.Unlock()
	if !ok {
		return nil
	}
	dump, err := ReadDump(DumpPath(d.dir, card))
	if err != nil {
		return err
	}
	return r.Replace(dump)
}

// Watch reloads a card whenever its file is written, created or renamed
// into place, until ctx ends (then it returns nil). Reload errors go to
// onError (nil: dropped), so a half-edited file never stops the watch. An
// error setting up the watch, or from the watcher, is returned.
func (d *DumpDir) Watch(ctx context.Context, onError func(error)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", d.dir, err)
	}
	defer w.Close()
	if err := w.Add(d.dir); err != nil {
		return fmt.Errorf("watch %s: %w", d.dir, err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("watch " + d.dir + ": watcher closed")
			}
			return fmt.Errorf("watch %s: %w", d.dir, err)
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("watch " + d.dir + ": watcher closed")
			}
			m := dumpFileName.FindStringSubmatch(filepath.Base(ev.Name))
			if m == nil || !ev.Has(fsnotify.Write) && !ev.Has(fsnotify.Create) {
				continue
			}
			card, _ := strconv.Atoi(m[1])
			if err := d.Reload(card); err != nil && onError != nil {
				onError(err)
			}
		}
	}
}
