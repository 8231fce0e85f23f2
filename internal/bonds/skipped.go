// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"fmt"
	"strings"
)

// Bounds on what DecodeSecret, DecodeSecrets and Fetch report as skipped.
// What is skipped comes from Secrets anyone who can write them in the
// namespace controls: a Secret of 1 MiB holds some 80,000 keys of a few
// bytes, each of which would be one skip, and bondfetch logs a line for
// each in the 64 MiB it runs in (deploy/bluetooth/operator.yaml). A
// person needs the first few reasons and the scale of the rest, so the
// list stops at either bound and the skips past it are counted, not
// formatted, into one *MoreSkipped at its end.
const (
	// MaxSkipped bounds how many skips a list holds, each a *SkipError
	// (the *MoreSkipped that may end it aside).
	MaxSkipped = 100
	// MaxSkippedBytes bounds the text of the skips a list holds: the sum
	// of their Error() lengths, in bytes. A skip whose text would pass it
	// is counted instead, as is every skip after it.
	MaxSkippedBytes = 16 << 10
	// MaxConflictNames bounds how many other Secrets the reason of one
	// conflicting copy names (see DecodeSecrets); the rest are counted,
	// "and N more".
	MaxConflictNames = 3
)

// MoreSkipped ends a skipped list when skips past MaxSkipped or
// MaxSkippedBytes were counted and not listed.
type MoreSkipped struct {
	// Count is how many skips were counted and not listed; at least 1.
	Count int
}

// Error says "and <Count> more keys skipped", and why they are not
// listed.
func (e *MoreSkipped) Error() string {
	return fmt.Sprintf("and %d more keys skipped (only the first %d skips, in at most %d bytes, are listed)", e.Count, MaxSkipped, MaxSkippedBytes)
}

// SkippedCount returns how many skips a skipped list of this package
// stands for: one for each entry, and for a *MoreSkipped its Count.
func SkippedCount(skipped []error) int {
	n := 0
	for _, err := range skipped {
		if m, ok := err.(*MoreSkipped); ok {
			n += m.Count
		} else {
			n++
		}
	}
	return n
}

// skipList collects skips up to MaxSkipped and MaxSkippedBytes and counts
// the rest without formatting them.
type skipList struct {
	list  []error
	bytes int // of the listed skips' text
	more  int // skips counted, not listed
}

// add lists that key of Secret secret ("<namespace>/<name>"; key "" for
// the whole Secret) was skipped for the reason format and args make, or
// counts it once the list is full.
func (l *skipList) add(secret, key, format string, args ...any) {
	if l.more > 0 || len(l.list) >= MaxSkipped {
		l.more++
		return
	}
	e := &SkipError{Secret: secret, Key: key, Reason: fmt.Sprintf(format, args...)}
	n := len(e.Error())
	if l.bytes+n > MaxSkippedBytes {
		l.more++
		return
	}
	l.list = append(l.list, e)
	l.bytes += n
}

// errors returns the skips listed, and a *MoreSkipped when some were only
// counted.
func (l *skipList) errors() []error {
	if l.more == 0 {
		return l.list
	}
	return append(l.list[:len(l.list):len(l.list)], &MoreSkipped{Count: l.more})
}

// conflict is the copies of one device's bond of the same rank that
// differ; a copy of a higher rank settles it. It names the first
// MaxConflictNames Secrets and counts the rest, so that what it holds,
// and the reason each copy is skipped for, stay small however many
// Secrets hold the device.
type conflict struct {
	rank  int
	names []string // the first Secrets of the conflict
	count int      // all the Secrets of the conflict
}

// add records one more Secret of the conflict.
func (k *conflict) add(name string) {
	if len(k.names) < MaxConflictNames {
		k.names = append(k.names, name)
	}
	k.count++
}

// String names the Secrets of the conflict: "a, b, c and 997 more".
func (k conflict) String() string {
	s := strings.Join(k.names, ", ")
	if more := k.count - len(k.names); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}
