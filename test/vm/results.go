// SPDX-License-Identifier: Apache-2.0

package vm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Result is what one guest test binary left in the results share: its
// output in <name>.log and its exit status in <name>.rc, written by the
// guest's /init.
type Result struct {
	Guest string
	// Ran is false when no exit status was written: the binary never ran
	// to its end (the guest hung, panicked or timed out before).
	Ran bool
	// Status is the exit status.
	Status int
	// Log is the binary's output (go test -test.v).
	Log []byte
	// Tests are the top-level and sub-tests the output reports, in order.
	Tests []TestLine
}

// TestLine is one "--- PASS|FAIL|SKIP: Name (1.23s)" line of a verbose
// test run.
type TestLine struct {
	Verdict, Name, Elapsed string
}

var testLine = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+s)\)`)

// figureLine is a test's log line that carries a measured figure beside
// its target: "    file_test.go:123: figure: ...".
var figureLine = regexp.MustCompile(`^\s+\S+\.go:\d+: (figure: .*)$`)

// Figures returns the figures the guest's tests logged ("figure: relay
// at 1,000 events/s: 0.12 % of a core (target <= 0.5 %)"), in order, so
// the tier prints them whether the tests passed or not.
func (r Result) Figures() []string {
	var out []string
	for _, line := range strings.Split(string(r.Log), "\n") {
		if m := figureLine.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// ParseTestLines picks the verdict lines out of go test -test.v output.
func ParseTestLines(log []byte) []TestLine {
	var out []TestLine
	for _, line := range strings.Split(string(log), "\n") {
		if m := testLine.FindStringSubmatch(line); m != nil {
			out = append(out, TestLine{Verdict: m[1], Name: m[2], Elapsed: m[3]})
		}
	}
	return out
}

// Collect reads each guest's result from dir. A missing log is an empty
// one; a missing or unreadable exit status leaves Ran false.
func Collect(dir string, guests []string) []Result {
	out := make([]Result, 0, len(guests))
	for _, g := range guests {
		r := Result{Guest: g}
		r.Log, _ = os.ReadFile(filepath.Join(dir, g+".log"))
		r.Tests = ParseTestLines(r.Log)
		if rc, err := os.ReadFile(filepath.Join(dir, g+".rc")); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(rc))); err == nil {
				r.Ran, r.Status = true, n
			}
		}
		out = append(out, r)
	}
	return out
}

// Err says why a result is a failure, or nil: no exit status, a non-zero
// one, a failed or skipped test (the tier has everything it needs, so a
// skip means a missing piece), or no passing test at all.
func (r Result) Err() error {
	var errs []error
	if !r.Ran {
		errs = append(errs, errors.New("left no exit status (did not finish)"))
	} else if r.Status != 0 {
		errs = append(errs, fmt.Errorf("exited with status %d", r.Status))
	}
	passed := 0
	for _, t := range r.Tests {
		switch t.Verdict {
		case "PASS":
			passed++
		case "SKIP":
			errs = append(errs, fmt.Errorf("skipped %s", t.Name))
		}
	}
	if passed == 0 {
		errs = append(errs, errors.New("reported no passing test"))
	}
	return errors.Join(errs...)
}
