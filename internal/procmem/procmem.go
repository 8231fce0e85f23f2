// SPDX-License-Identifier: Apache-2.0

// Package procmem fits a long-running Go process to a small container's
// memory: it sets the Go runtime's soft memory limit from the container's
// cgroup limit, and it gives back, once start-up is over, the memory that
// only start-up used.
//
// Why start-up memory matters here: most of an operator's resident set at
// rest is not its heap but pages of its own binary (RssFile in
// /proc/<pid>/status). Package initialisation of a Kubernetes client
// (every API group's scheme and protobuf registrations), the first List of
// every informer and the first publication touch tens of MiB of text and
// rodata once, and the kernel keeps them mapped, readahead and large
// folios included, until memory pressure reclaims them. None of that is
// the process's own memory, but it is charged against the container and
// shows as its RSS.
package procmem

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// DefaultLimitFraction is the share of the container's memory limit the
// Go runtime is asked to stay under: the rest is for what the runtime
// does not count (the binary's pages, thread stacks outside the Go heap)
// and for children in the same cgroup.
const DefaultLimitFraction = 0.75

// cgroupRoot is where cgroup v2 is mounted (cgroups(7)).
const cgroupRoot = "/sys/fs/cgroup"

// SetLimitFromCgroup sets the Go runtime's soft memory limit
// (runtime/debug.SetMemoryLimit) to fraction of this process's cgroup v2
// memory.max, and returns the limit set, in bytes. It sets nothing and
// returns 0 when GOMEMLIMIT is in the environment (the runtime has read
// it: an explicit setting wins), when the cgroup has no limit ("max"),
// and when there is no cgroup v2 to read; only a memory.max it cannot
// parse is an error. The cgroup is the one /proc/self/cgroup names,
// under /sys/fs/cgroup; in a container with its own cgroup namespace
// that is "/", the container's own.
func SetLimitFromCgroup(fraction float64) (int64, error) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return 0, nil
	}
	if !(fraction > 0 && fraction <= 1) {
		return 0, fmt.Errorf("procmem: limit fraction %v, want (0, 1]", fraction)
	}
	max, err := cgroupMemoryMax(cgroupRoot, "/proc/self/cgroup")
	if err != nil || max <= 0 {
		return 0, err
	}
	limit := int64(float64(max) * fraction)
	debug.SetMemoryLimit(limit)
	return limit, nil
}

// cgroupMemoryMax reads memory.max of the cgroup v2 that the
// /proc/<pid>/cgroup file at self names, under root: the limit in
// bytes, 0 for "max" or no cgroup v2 (no "0::" line, no memory.max
// file). When the named directory is not under root (a cgroup namespace
// that does not match the mount), root's own memory.max is read.
func cgroupMemoryMax(root, self string) (int64, error) {
	data, err := os.ReadFile(self)
	if err != nil {
		return 0, nil
	}
	var path string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			path = p
		}
	}
	if path == "" {
		return 0, nil // cgroup v1 only
	}
	file := filepath.Join(root, filepath.Clean("/"+path), "memory.max")
	raw, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		file = filepath.Join(root, "memory.max")
		raw, err = os.ReadFile(file)
	}
	if err != nil {
		return 0, nil
	}
	s := strings.TrimSpace(string(raw))
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n == math.MaxInt64 {
		return 0, fmt.Errorf("procmem: %s holds %q, want a byte count or max", file, s)
	}
	return n, nil
}

// ReleaseStartupMemory gives back what start-up used and rest does not:
// the heap the runtime has freed (runtime/debug.FreeOSMemory), and the
// mappings of this binary's read-only segments (text, rodata), which it
// drops with madvise(MADV_DONTNEED) after marking them MADV_NOHUGEPAGE.
// Those are private, never-written file mappings, so dropping them loses
// nothing: the page cache keeps the file, and a page touched again comes
// back with a minor fault, a few pages around it at a time (the kernel's
// fault-around) instead of a 2 MiB folio. It returns how many bytes of
// mappings it dropped; the error names a mapping madvise refused, and
// the rest are dropped regardless.
//
// Call it once, when the process has done its start-up and settled: a
// page dropped while still in use is only faulted back.
func ReleaseStartupMemory() (int64, error) {
	debug.FreeOSMemory()
	self, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("procmem: this binary: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("procmem: %w", err)
	}
	var dropped int64
	var errs []error
	for _, m := range readOnlyMappings(maps, self) {
		if err := madvise(m, unix.MADV_NOHUGEPAGE); err != nil {
			errs = append(errs, fmt.Errorf("procmem: madvise NOHUGEPAGE %#x-%#x: %w", m.start, m.end, err))
		}
		if err := madvise(m, unix.MADV_DONTNEED); err != nil {
			errs = append(errs, fmt.Errorf("procmem: madvise DONTNEED %#x-%#x: %w", m.start, m.end, err))
			continue
		}
		dropped += int64(m.end - m.start)
	}
	return dropped, errors.Join(errs...)
}

// madvise advises the kernel about m. It takes the addresses as integers,
// not a Go slice: the mappings are the binary's own segments, which no Go
// pointer should be made to cover.
func madvise(m mapping, advice int) error {
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, uintptr(advice)); errno != 0 {
		return errno
	}
	return nil
}

// mapping is one line of /proc/<pid>/maps: [start, end).
type mapping struct{ start, end uintptr }

// readOnlyMappings returns the private mappings of the file path in a
// /proc/<pid>/maps text (proc(5): "start-end perms offset dev inode
// path") that are neither writable nor shared. Malformed lines are
// skipped.
func readOnlyMappings(maps []byte, path string) []mapping {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 6 || f[5] != path || len(f[1]) != 4 || f[1][1] == 'w' || f[1][3] != 'p' {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		out = append(out, mapping{uintptr(start), uintptr(end)})
	}
	return out
}

// DefaultStartupWindow is how long after start an operator's start-up is
// taken to be over: the client and informers made, each informer's first
// List, the first publication and the kubelet's registration, which take
// one to three seconds on a two-core machine, with room for a slow one.
const DefaultStartupWindow = 10 * time.Second

// AfterStartup runs ReleaseStartupMemory once, wait after it is called,
// on a goroutine of its own, and passes the result to report; it does
// nothing when ctx ends first.
func AfterStartup(ctx context.Context, wait time.Duration, report func(dropped int64, err error)) {
	go func() {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
			report(ReleaseStartupMemory())
		}
	}()
}

// DefaultBurstCheck is how often, once start-up is over, an operator
// looks at how much of its binary it has mapped (RssFile): rare enough to
// cost nothing at rest (one read of /proc/self/status), soon enough that a
// burst's pages are given back within a minute of its end.
const DefaultBurstCheck = 30 * time.Second

// DefaultBurstGrowth is how many bytes RssFile must have grown since the
// last release before the pages are dropped again: a burst of work
// (dozens of claims prepared at once, a relist) touches MiBs of code that
// rest never runs, while a few pages come and go on their own.
const DefaultBurstGrowth = 4 << 20

// ReleaseAfterBursts runs ReleaseStartupMemory again after a burst of
// work, on a goroutine of its own until ctx ends: every interval it reads
// this process's RssFile (/proc/self/status, through prometheus/procfs),
// and when that has grown by at least growth bytes since the last release
// and did not grow over the last interval (the burst is over), it
// releases and passes the result to report. A process that stays at rest
// reads one small file per interval and releases nothing. A failed read
// is passed to report as an error, and the checks go on.
func ReleaseAfterBursts(ctx context.Context, interval time.Duration, growth int64, report func(dropped int64, err error)) {
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		// The base is what is mapped now, right after a release: a burst
		// before the first check is a burst too.
		base, err := rssFile()
		if err != nil {
			report(0, err)
			base = -1
		}
		last := base
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			now, err := rssFile()
			if err != nil {
				report(0, err)
				continue
			}
			if base < 0 {
				base = now
			}
			if now-base >= growth && now <= last {
				report(ReleaseStartupMemory())
				if now, err = rssFile(); err == nil {
					base = now
				}
			}
			last = now
		}
	}()
}

// rssFile returns this process's RssFile in bytes: resident pages of
// mapped files, most of them its own binary's.
func rssFile() (int64, error) {
	self, err := procfs.Self()
	if err != nil {
		return 0, fmt.Errorf("procmem: %w", err)
	}
	st, err := self.NewStatus()
	if err != nil {
		return 0, fmt.Errorf("procmem: %w", err)
	}
	return int64(st.RssFile), nil
}

// Fit is what an operator's main calls once at start: SetLimitFromCgroup
// with DefaultLimitFraction, AfterStartup with DefaultStartupWindow, and
// ReleaseAfterBursts with DefaultBurstCheck and DefaultBurstGrowth from
// then on, logging every result with ctx's logger.
func Fit(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if limit, err := SetLimitFromCgroup(DefaultLimitFraction); err != nil {
		logger.Error(err, "Go memory limit left unset")
	} else if limit > 0 {
		logger.V(2).Info("Go memory limit set from the container's", "bytes", limit)
	}
	AfterStartup(ctx, DefaultStartupWindow, func(dropped int64, err error) {
		if err != nil {
			logger.Error(err, "Releasing start-up memory")
		}
		logger.V(2).Info("Released start-up memory", "mappingBytes", dropped)
		ReleaseAfterBursts(ctx, DefaultBurstCheck, DefaultBurstGrowth, func(dropped int64, err error) {
			if err != nil {
				logger.Error(err, "Releasing memory after a burst")
				return
			}
			logger.V(2).Info("Released memory after a burst", "mappingBytes", dropped)
		})
	})
}
