// SPDX-License-Identifier: Apache-2.0

package uevent

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Size bounds of a kernel uevent datagram. The kernel builds the variables in
// a 2048-byte buffer with at most 64 of them (UEVENT_BUFFER_SIZE and
// UEVENT_NUM_ENVP in include/linux/kobject.h) and prefixes the
// "ACTION@DEVPATH" header, whose DEVPATH is bounded by PATH_MAX (4096). The
// limits here leave headroom above those figures and stop anything larger.
const (
	// MaxDatagramSize is the largest datagram Parse accepts, in bytes.
	MaxDatagramSize = 8192
	// MaxVars is the largest number of KEY=VALUE variables Parse accepts.
	MaxVars = 64
	// maxActionLen bounds the action word ("offline" is the longest the
	// kernel sends today).
	maxActionLen = 32
)

// Event is one kernel uevent.
//
// Action is the kernel's action word (add, remove, change, move, online,
// offline, bind, unbind). DevPath is the device's path below /sys with a
// leading slash, e.g. "/devices/virtual/net/lo". Subsystem is the SUBSYSTEM
// variable (e.g. "hid", "input", "net"). Env holds every variable of the
// datagram as sent, including ACTION, DEVPATH, SUBSYSTEM and SEQNUM. Seqnum is
// the kernel's global uevent sequence number (SEQNUM), which increases by one
// per event, so a gap between two received events means events were missed.
type Event struct {
	Action    string
	DevPath   string
	Subsystem string
	Env       map[string]string
	Seqnum    uint64
}

// ErrLibudev is returned by Parse for a datagram in libudev's format (it
// starts with the "libudev" magic): udev's rebroadcast on group 2, never the
// kernel's own event.
var ErrLibudev = errors.New("uevent: libudev-format datagram, not a kernel uevent")

// ErrMalformed is wrapped by every *ParseError, so that errors.Is(err,
// ErrMalformed) tells a bad datagram from other errors.
var ErrMalformed = errors.New("uevent: malformed datagram")

// ParseError describes why a datagram is not a well-formed kernel uevent.
// Offset is the byte offset into the datagram where the problem was found.
type ParseError struct {
	Offset int
	Reason string
}

// Error returns "uevent: malformed datagram at byte N: reason".
func (e *ParseError) Error() string {
	return fmt.Sprintf("%v at byte %d: %s", ErrMalformed, e.Offset, e.Reason)
}

// Unwrap returns ErrMalformed.
func (e *ParseError) Unwrap() error { return ErrMalformed }

func malformed(off int, format string, args ...any) error {
	return &ParseError{Offset: off, Reason: fmt.Sprintf(format, args...)}
}

// Parse decodes one kernel uevent datagram, laid out by
// lib/kobject_uevent.c as "ACTION@DEVPATH\0" followed by NUL-terminated
// "KEY=VALUE" variables.
//
// It returns ErrLibudev for libudev's format and a *ParseError (wrapping
// ErrMalformed) for anything else that is not a complete kernel event: a
// datagram over MaxDatagramSize bytes, a header without '@' or without a
// DEVPATH starting with '/', an empty variable, a variable without '=' or with
// an empty key, a repeated key, more than MaxVars variables, a missing ACTION,
// DEVPATH, SUBSYSTEM or SEQNUM, ACTION or DEVPATH disagreeing with the header,
// or a SEQNUM that is not a decimal uint64. The final NUL may be absent.
// Values are kept byte for byte (they may hold any byte but NUL, e.g. a
// device-supplied HID name).
func Parse(b []byte) (Event, error) {
	if len(b) == 0 {
		return Event{}, malformed(0, "empty datagram")
	}
	if len(b) > MaxDatagramSize {
		return Event{}, malformed(MaxDatagramSize, "datagram of %d bytes exceeds the %d-byte limit", len(b), MaxDatagramSize)
	}
	if bytes.HasPrefix(b, []byte("libudev")) {
		return Event{}, ErrLibudev
	}
	end := bytes.IndexByte(b, 0)
	if end < 0 {
		return Event{}, malformed(len(b), "header %q is not NUL-terminated", clip(b))
	}
	header := b[:end]
	at := bytes.IndexByte(header, '@')
	if at < 0 {
		return Event{}, malformed(0, "header %q has no '@' between action and devpath", clip(header))
	}
	action, devpath := string(header[:at]), string(header[at+1:])
	if err := checkAction(action); err != nil {
		return Event{}, err
	}
	if len(devpath) == 0 || devpath[0] != '/' {
		return Event{}, malformed(at+1, "devpath %q does not start with '/'", clip([]byte(devpath)))
	}

	env := make(map[string]string, 16)
	off := end + 1
	for off < len(b) {
		n := bytes.IndexByte(b[off:], 0)
		if n < 0 {
			n = len(b) - off // last variable without its NUL
		}
		field := b[off : off+n]
		if len(field) == 0 {
			return Event{}, malformed(off, "empty variable")
		}
		eq := bytes.IndexByte(field, '=')
		if eq < 0 {
			return Event{}, malformed(off, "variable %q has no '='", clip(field))
		}
		if eq == 0 {
			return Event{}, malformed(off, "variable %q has an empty key", clip(field))
		}
		key := string(field[:eq])
		if _, dup := env[key]; dup {
			return Event{}, malformed(off, "variable %q repeated", key)
		}
		if len(env) == MaxVars {
			return Event{}, malformed(off, "more than %d variables", MaxVars)
		}
		env[key] = string(field[eq+1:])
		off += n + 1
	}

	ev := Event{Action: action, DevPath: devpath, Env: env}
	for _, key := range []string{"ACTION", "DEVPATH", "SUBSYSTEM", "SEQNUM"} {
		if _, ok := env[key]; !ok {
			return Event{}, malformed(len(b), "variable %s missing", key)
		}
	}
	if env["ACTION"] != action {
		return Event{}, malformed(0, "ACTION=%q disagrees with header action %q", clip([]byte(env["ACTION"])), action)
	}
	if env["DEVPATH"] != devpath {
		return Event{}, malformed(at+1, "DEVPATH=%q disagrees with header devpath %q", clip([]byte(env["DEVPATH"])), clip([]byte(devpath)))
	}
	ev.Subsystem = env["SUBSYSTEM"]
	if ev.Subsystem == "" {
		return Event{}, malformed(len(b), "SUBSYSTEM is empty")
	}
	seq, err := strconv.ParseUint(env["SEQNUM"], 10, 64)
	if err != nil {
		return Event{}, malformed(len(b), "SEQNUM=%q is not a decimal uint64", clip([]byte(env["SEQNUM"])))
	}
	ev.Seqnum = seq
	return ev, nil
}

// checkAction accepts a non-empty word of lowercase ASCII letters, which is
// what every kernel action is (kobject_actions[] in lib/kobject_uevent.c).
// Unknown words pass, so that an action added by a later kernel is still
// delivered.
func checkAction(action string) error {
	if action == "" {
		return malformed(0, "empty action")
	}
	if len(action) > maxActionLen {
		return malformed(0, "action of %d bytes is longer than %d", len(action), maxActionLen)
	}
	for i := 0; i < len(action); i++ {
		if c := action[i]; c < 'a' || c > 'z' {
			return malformed(i, "action %q is not a lowercase word", clip([]byte(action)))
		}
	}
	return nil
}

// clip shortens untrusted bytes quoted in an error message.
func clip(b []byte) string {
	const max = 64
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
