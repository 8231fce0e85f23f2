// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package relayd

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/evdev"
	"github.com/liken-sh/operators/internal/hid"
	"github.com/liken-sh/operators/test/vm/guest"
)

// costPads is how many controllers the cost test relays at once.
const costPads = 4

// The relay's cost, measured on the real binary (cmd/bluetooth-input-relay)
// with four pads claimed: the CPU it spends relaying 1,000 events/s, the
// latency it adds to each event (the kernel's timestamp of the event on
// the virtual node less its timestamp on the pad's own node), and its
// memory. The guest is emulated (qemu without KVM), so the CPU figure is
// an upper bound. Every event must arrive, in order, on its own claim's
// node.
func TestVMRelayCost(t *testing.T) {
	if err := guest.Modprobe("uhid", "hid-generic", "evdev", "uinput"); err != nil {
		t.Fatal(err)
	}
	var pads []*guest.UHID
	var addresses []string
	for i := range costPads {
		spec := padSpec
		spec.Name = fmt.Sprintf("liken cost pad %d", i)
		spec.Uniq = fmt.Sprintf("a4:c1:38:0e:5f:%02x", 0x30+i)
		pad, err := guest.CreateUHID(spec)
		if err != nil {
			t.Fatal(err)
		}
		defer pad.Destroy()
		pads = append(pads, pad)
		addresses = append(addresses, strings.ToUpper(spec.Uniq))
	}
	var scan hid.Scan
	if !guest.WaitFor(30*time.Second, func() bool {
		var err error
		scan, err = hid.Discover("/sys", "/dev")
		if err != nil {
			return false
		}
		for _, a := range addresses {
			if len(scan.EventNodes(a, "")) != 1 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the pads' nodes never all appeared: %+v", scan.Devices)
	}

	dir := t.TempDir()
	socket := filepath.Join(dir, "relay.sock")
	relay := exec.Command(guest.InputRelay, "-socket", socket, "-state", filepath.Join(dir, "state.json"))
	relay.Stderr = os.Stderr
	if err := relay.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		relay.Process.Signal(os.Interrupt)
		relay.Wait()
	}()
	ctx := context.Background()
	client := NewClient(socket)
	var consumers, sources []*os.File
	for i, a := range addresses {
		var st ClaimStatus
		var err error
		if !guest.WaitFor(30*time.Second, func() bool {
			st, err = client.Attach(ctx, fmt.Sprintf("c0ffee00-0000-4000-8000-%012d", i), a)
			return err == nil && st.Attached
		}) {
			t.Fatalf("claim on pad %d: %+v, %v", i, st, err)
		}
		c, err := evdev.Open(filepath.Join("/dev/input", st.Nodes[0].Name))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		consumers = append(consumers, c)
		s, err := evdev.Open(scan.EventNodes(a, "")[0])
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sources = append(sources, s)
	}

	// Collect every X event on both sides until the test ends.
	type stamp struct {
		value int32
		at    time.Time
	}
	var mu sync.Mutex
	got := make([][2][]stamp, costPads)  // [pad][source, virtual]
	dropped := make([][2]bool, costPads) // a reader that saw SYN_DROPPED
	var readers sync.WaitGroup
	collect := func(pad, side int, f *os.File) {
		defer readers.Done()
		buf := make([]byte, 64*evdev.EventSize)
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			evs, _ := evdev.DecodeEvents(nil, buf[:n])
			mu.Lock()
			for _, e := range evs {
				if e.Type == evdev.EvSyn && e.Code == evdev.SynDropped {
					dropped[pad][side] = true
				}
				if e.Type == evdev.EvAbs && e.Code == 0 {
					got[pad][side] = append(got[pad][side], stamp{e.Value, e.Time})
				}
			}
			mu.Unlock()
		}
	}
	for i := range costPads {
		readers.Add(2)
		go collect(i, 0, sources[i])
		go collect(i, 1, consumers[i])
	}

	// drive sends reports to the first n pads in turn, one every every,
	// each moving X and Y (two events), for window. It catches up to the
	// rate rather than trust a ticker, which an emulated guest cannot
	// keep at 2 ms.
	drive := func(n int, every, window time.Duration) (sent int, start time.Time, elapsed time.Duration) {
		start = time.Now()
		for {
			now := time.Since(start)
			if now >= window {
				break
			}
			for due := int(now / every); sent < due; sent++ {
				x := int8(sent%200 - 100)
				if x == 0 {
					x = 1
				}
				if err := pads[sent%n].Input([]byte{0, byte(x), byte(-x)}); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(time.Millisecond)
		}
		return sent, start, time.Since(start)
	}
	// caughtUp waits until each claim's node shows its pad's last value.
	caughtUp := func() {
		if !guest.WaitFor(10*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			for i := range got {
				src, virt := got[i][0], got[i][1]
				if len(src) > 0 && (len(virt) == 0 || virt[len(virt)-1].value != src[len(src)-1].value) {
					return false
				}
			}
			return true
		}) {
			t.Error("a claim's node did not reach its pad's last value within 10 s of it")
		}
	}

	// One pad played at a pad's usual report rate (250 reports a second,
	// 500 events), the relay otherwise idle: the latency a player feels.
	_, lightStart, _ := drive(1, 4*time.Millisecond, 4*time.Second)
	caughtUp()
	// Then 500 reports a second spread over the four pads: 1,000 events
	// a second, for 10 s, for the relay's cost.
	cpu0 := cpuNanos(t, relay.Process.Pid)
	sent, heavyStart, elapsed := drive(costPads, 2*time.Millisecond, 10*time.Second)
	cpu := cpuNanos(t, relay.Process.Pid) - cpu0
	caughtUp()
	for _, f := range append(consumers, sources...) {
		f.Close()
	}
	readers.Wait()

	// A reader that falls behind loses events to the kernel's buffer for
	// it (SYN_DROPPED; the relay then reads the state back), so the
	// claim's events must be the pad's in order, with none made up, and
	// the ones lost are counted. Each latency is filed under the phase
	// its event was sent in.
	var light, heavy []time.Duration
	total, lost := 0, 0
	for i := range got {
		src, virt := got[i][0], got[i][1]
		total += len(src)
		j := 0
		for _, v := range virt {
			k := j
			for k < len(src) && (src[k].value != v.value || src[k].at.After(v.at)) {
				k++
			}
			if k == len(src) {
				// Unless this test's own reader of the pad's node lost
				// events too, the relay made this one up.
				if !dropped[i][0] {
					t.Errorf("pad %d: its claim's node read %d at %s, which the pad never sent before then", i, v.value, v.at)
				}
				continue
			}
			if src[k].at.Before(heavyStart) {
				if !src[k].at.Before(lightStart) {
					light = append(light, v.at.Sub(src[k].at))
				}
			} else {
				heavy = append(heavy, v.at.Sub(src[k].at))
			}
			j = k + 1
		}
		lost += len(src) - len(virt)
	}
	if len(light) == 0 || len(heavy) == 0 {
		t.Fatalf("relayed %d events in the light phase and %d in the heavy one", len(light), len(heavy))
	}
	pcts := func(l []time.Duration) string {
		slices.Sort(l)
		pct := func(p float64) time.Duration { return l[int(p*float64(len(l)-1))].Round(time.Microsecond) }
		return fmt.Sprintf("p50 %s, p99 %s, max %s over %d events", pct(0.5), pct(0.99), pct(1), len(l))
	}
	lostSaid := fmt.Sprintf("%d of %d events lost to a full kernel buffer", lost, total)
	for i := range dropped {
		if dropped[i][0] {
			lostSaid = "events lost to full kernel buffers (this test's own reader of the pads lost some too, so they are not counted)"
		}
	}
	rate := float64(2*sent) / elapsed.Seconds()
	t.Logf("figure: latency the relay adds per event, one pad at 500 events/s: %s (target p99 <= 1 ms; emulated guest)", pcts(light))
	t.Logf("figure: relay at %.0f events/s over 4 pads: %.2f %% of a core (target <= 0.5 %%; emulated guest, an upper bound); latency %s; %s",
		rate, 100*float64(cpu)/float64(elapsed.Nanoseconds()), pcts(heavy), lostSaid)
	rss, hwm, anon, file := memory(t, relay.Process.Pid)
	t.Logf("figure: relay memory with %d pads claimed: VmRSS %.1f MiB (anon %.1f, file %.1f), peak %.1f MiB (target <= 8 MiB)", costPads, rss, anon, file, hwm)
}

// cpuNanos is the CPU time process pid's threads have used: the sum of
// the first field (nanoseconds on a CPU) of each task's schedstat
// (/proc/<pid>/schedstat alone is the main thread's).
func cpuNanos(t *testing.T, pid int) int64 {
	t.Helper()
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(files) == 0 {
		t.Fatalf("no task schedstat for %d (%v)", pid, err)
	}
	var sum int64
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that ended
		}
		n, err := strconv.ParseInt(strings.Fields(string(raw))[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		sum += n
	}
	return sum
}

// memory returns VmRSS, VmHWM, RssAnon and RssFile of pid in MiB.
func memory(t *testing.T, pid int) (rss, hwm, anon, file float64) {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			hwm = kb / 1024
		case "RssAnon:":
			anon = kb / 1024
		case "RssFile:":
			file = kb / 1024
		}
	}
	return rss, hwm, anon, file
}
