// SPDX-License-Identifier: Apache-2.0

package speakers

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/dbusd"
)

// Defaults of Options.
const (
	// DefaultConnectWait bounds one attempt to connect once the socket
	// exists: the bus accepting a connection and org.bluez getting an
	// owner.
	DefaultConnectWait = 10 * time.Second
	// DefaultBackstop is how often the socket is looked at when no
	// file event came: a directory watch that missed an event (the
	// volume remounted under it) costs at most this long.
	DefaultBackstop = time.Minute
)

// Options configure Start.
type Options struct {
	// Address is the media bus ("unix:path=/absolute/path", the form
	// DBUS_SYSTEM_BUS_ADDRESS takes in the claim's CDI spec). Empty: the
	// claim delivered no bus, and there are no speakers.
	Address string
	// OnChange is called, without blocking the reader for long, after
	// every change of the set or of the bus being followed.
	OnChange func()
	// ConnectWait bounds one connection attempt; zero means
	// DefaultConnectWait.
	ConnectWait time.Duration
	// Backstop; zero means DefaultBackstop.
	Backstop time.Duration
}

// Reader follows BlueZ's speakers on one bus address. It is safe for
// concurrent use.
type Reader struct {
	opts Options

	mu        sync.Mutex
	speakers  []Speaker
	following bool
	reported  map[string]bool // connection problems logged
	problems  map[string]bool // devices left out, logged
	done      chan struct{}
}

// Start follows the speakers on opts.Address until ctx ends: it connects
// when the bus socket is there, reads BlueZ's tree, reads it again on
// each of BlueZ's change signals, and, when the bus or bluetoothd goes
// away, keeps the last set with every speaker disconnected and waits for
// the socket's directory to show a new socket (fsnotify, with a slow
// backstop), then connects again. A bad address is logged and yields no
// speakers; nothing here ends the operator.
func Start(ctx context.Context, opts Options) *Reader {
	if opts.ConnectWait <= 0 {
		opts.ConnectWait = DefaultConnectWait
	}
	if opts.Backstop <= 0 {
		opts.Backstop = DefaultBackstop
	}
	if opts.OnChange == nil {
		opts.OnChange = func() {}
	}
	r := &Reader{opts: opts, reported: map[string]bool{}, problems: map[string]bool{}, done: make(chan struct{})}
	if opts.Address == "" {
		close(r.done)
		return r
	}
	go r.run(ctx)
	return r
}

// Speakers returns the last set read, sorted by name, and whether the
// bus is being followed now (false: BlueZ is not reachable, and the set
// is the last one known, every speaker disconnected).
func (r *Reader) Speakers() ([]Speaker, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.speakers), r.following
}

// Done is closed when the reader has stopped (ctx ended, or there is no
// bus to follow).
func (r *Reader) Done() <-chan struct{} { return r.done }

func (r *Reader) run(ctx context.Context) {
	defer close(r.done)
	logger := klog.FromContext(ctx).WithValues("bus", r.opts.Address)
	socket, err := dbusd.SocketPath(r.opts.Address)
	if err != nil {
		logger.Error(err, "The media bus address cannot be followed; no Bluetooth speakers are published")
		return
	}
	dir := filepath.Dir(socket)
	events := make(chan struct{}, 1)
	w, err := fsnotify.NewWatcher()
	if err == nil {
		err = w.Add(dir)
	}
	if err != nil {
		logger.Error(err, "Cannot watch the media bus directory; a new bus is looked for by the backstop", "dir", dir, "backstop", r.opts.Backstop)
	} else {
		defer w.Close()
		go func() {
			for {
				select {
				case ev, ok := <-w.Events:
					if !ok {
						return
					}
					if ev.Name == socket {
						select {
						case events <- struct{}{}:
						default:
						}
					}
				case _, ok := <-w.Errors:
					if !ok {
						return
					}
				}
			}
		}()
	}
	for ctx.Err() == nil {
		if isSocket(socket) {
			c, err := bluez.Connect(ctx, bluez.Options{Address: r.opts.Address, Wait: r.opts.ConnectWait})
			if err == nil {
				logger.Info("Following BlueZ's speakers on the media bus", "owner", c.Owner())
				r.follow(ctx, logger, c)
				c.Close()
				if ctx.Err() != nil {
					return
				}
				continue
			}
			if ctx.Err() != nil {
				return
			}
			r.once(logger, err, "The media bus does not answer yet; waiting for it")
			if errors.Is(err, bluez.ErrNoBlueZ) {
				// The bus is up and bluetoothd not on it: Connect's
				// own wait follows org.bluez's owner changes.
				continue
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-events:
		case <-time.After(r.opts.Backstop):
		}
	}
}

// follow reads the tree on every change until the client stops.
func (r *Reader) follow(ctx context.Context, logger klog.Logger, c *bluez.Client) {
	r.read(ctx, logger, c, true)
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-c.Changes():
			if !ok {
				logger.Info("The media bus or bluetoothd went away; speakers are kept, disconnected, until it is back", "reason", c.Err())
				r.lost()
				return
			}
			// Changes come in bursts (a connection sets several
			// properties); one read covers what is queued.
			for drained := false; !drained; {
				select {
				case _, ok := <-c.Changes():
					if !ok {
						drained = true
					}
				default:
					drained = true
				}
			}
			r.read(ctx, logger, c, false)
		}
	}
}

func (r *Reader) read(ctx context.Context, logger klog.Logger, c *bluez.Client, first bool) {
	objs, err := c.ManagedObjects(ctx)
	if err != nil {
		r.once(logger, err, "Reading BlueZ's devices failed; the last set is kept")
		return
	}
	got, problems := FromObjects(objs)
	r.mu.Lock()
	now := map[string]bool{}
	for _, p := range problems {
		if !r.problems[p.Error()] {
			logger.Error(p, "A BlueZ device is not published")
		}
		now[p.Error()] = true
	}
	r.problems = now
	changed := first || !r.following || !slices.Equal(got, r.speakers)
	r.speakers, r.following = got, true
	r.mu.Unlock()
	if changed {
		r.opts.OnChange()
	}
}

// lost keeps the set with every speaker disconnected: with the bus gone
// no link of this bluetoothd is up, and a speaker is never dropped for it.
func (r *Reader) lost() {
	r.mu.Lock()
	for i := range r.speakers {
		r.speakers[i].Connected = false
	}
	r.following = false
	r.mu.Unlock()
	r.opts.OnChange()
}

// once logs err with msg when it differs from the last one logged.
func (r *Reader) once(logger klog.Logger, err error, msg string) {
	r.mu.Lock()
	key := msg + err.Error()
	seen := r.reported[key]
	r.reported[key] = true
	r.mu.Unlock()
	if !seen {
		logger.Info(msg, "reason", err.Error())
	}
}

func isSocket(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().Type() == fs.ModeSocket
}
