// SPDX-License-Identifier: Apache-2.0

package node

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Sysctls are the kernel settings a kubelet and the CNI bridge plugin
// change on the host: the kubelet's container manager sets the first three
// (pkg/kubelet/cm, setupKernelTunables) and the bridge plugin turns on
// forwarding for its gateway.
var Sysctls = []string{"vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops", "net.ipv4.ip_forward"}

// HostPaths are the host directories a node run creates: the kubelet's
// root (with plugins_registry and the plugins' sockets), CDI specs,
// the sockets the operators' pods share through hostPath volumes, the
// runtime's shim and netns state, the CNI plugins' state and the
// kubelet's container-log links. A path that existed before the run is
// kept; one the run created is removed. What the run itself makes below
// a directory that may exist (the stand-in device nodes) is recorded one
// path at a time instead ([Host.CreateCharDevice]).
var HostPaths = []string{
	"/var/lib/kubelet",
	"/run/cdi",
	"/run/bluetooth.liken.sh",
	"/run/audio.liken.sh",
	"/run/containerd",
	"/run/netns",
	"/run/nri",
	"/var/lib/cni",
	"/var/log/pods",
	"/var/log/containers",
	"/etc/cdi",
	"/run/liken-tier",
}

// Host is what the host looked like before a node run, recorded so that
// everything the run changes can be put back: sysctls, iptables rule sets,
// mounts, cgroups, network links, directories and the device nodes it
// made. It is saved as JSON, so
// that a run killed before its cleanup is cleaned up by the next one
// ([Recover]).
type Host struct {
	Sysctls    map[string]string `json:"sysctls"`
	IPTables   map[string]string `json:"iptables"` // iptables-save output by command
	Mounts     []string          `json:"mounts"`   // mount points
	Cgroups    []string          `json:"cgroups"`  // directories at the top of each cgroup hierarchy
	Links      []string          `json:"links"`    // network interface names
	Paths      map[string]bool   `json:"paths"`    // HostPaths: existed before
	BinDir     string            `json:"binDir"`   // processes running from here are the run's
	Created    []Created         `json:"created"`  // made by the run, oldest first ([Host.CreateCharDevice])
	RecordedAt time.Time         `json:"recordedAt"`
}

// iptablesCommands are the rule sets recorded: a kubelet adds its canary
// and firewall chains to both families.
var iptablesCommands = []string{"iptables", "ip6tables"}

// Snapshot records the host as it is now. binDir is the directory the run
// starts containerd, its shims and the kubelet from.
func Snapshot(binDir string) (*Host, error) {
	h := &Host{Sysctls: map[string]string{}, IPTables: map[string]string{}, Paths: map[string]bool{}, BinDir: binDir, RecordedAt: time.Now()}
	for _, k := range Sysctls {
		v, err := readSysctl(k)
		if err != nil {
			return nil, err
		}
		h.Sysctls[k] = v
	}
	for _, cmd := range iptablesCommands {
		out, err := exec.Command(cmd + "-save").Output()
		if err != nil {
			return nil, fmt.Errorf("node: %s-save: %w", cmd, err)
		}
		h.IPTables[cmd] = normaliseRules(string(out))
	}
	var err error
	if h.Mounts, err = mountPoints(); err != nil {
		return nil, err
	}
	if h.Cgroups, err = topCgroups(); err != nil {
		return nil, err
	}
	if h.Links, err = links(); err != nil {
		return nil, err
	}
	for _, p := range HostPaths {
		_, err := os.Lstat(p)
		h.Paths[p] = err == nil
	}
	return h, nil
}

// Save writes h to path as JSON.
func (h *Host) Save(path string) error {
	data, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// LoadHost reads a Host written by Save.
func LoadHost(path string) (*Host, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var h Host
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("node: %s: %w", path, err)
	}
	return &h, nil
}

// Restore ends every process of the run and puts back what it changed, in
// the order that lets each step succeed: processes (so nothing holds a
// mount or a cgroup), mounts newest first, cgroups deepest first, network
// links, the device nodes and directories the run made, directories,
// iptables and sysctls. It does every step even when
// one fails and returns all failures joined.
func (h *Host) Restore() error {
	var errs []error
	if err := killRunProcesses(h.BinDir); err != nil {
		errs = append(errs, err)
	}
	if err := h.unmount(); err != nil {
		errs = append(errs, err)
	}
	if err := h.removeCgroups(); err != nil {
		errs = append(errs, err)
	}
	if err := h.removeLinks(); err != nil {
		errs = append(errs, err)
	}
	if err := h.removeCreated(); err != nil {
		errs = append(errs, err)
	}
	for _, p := range HostPaths {
		if h.Paths[p] {
			continue
		}
		if err := os.RemoveAll(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("node: remove %s: %w", p, err))
		}
	}
	for _, cmd := range iptablesCommands {
		out, err := exec.Command(cmd + "-save").Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("node: %s-save: %w", cmd, err))
			continue
		}
		if normaliseRules(string(out)) == h.IPTables[cmd] {
			continue
		}
		// iptables-restore flushes only the tables its input names: a
		// table the run added chains to but that held nothing before is
		// named empty, which flushes it and deletes its chains.
		input := h.IPTables[cmd]
		for _, table := range tables(normaliseRules(string(out))) {
			if !slices.Contains(tables(input), table) {
				input += "*" + table + "\nCOMMIT\n"
			}
		}
		restore := exec.Command(cmd + "-restore")
		restore.Stdin = strings.NewReader(input)
		if out, err := restore.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("node: %s-restore: %w: %s", cmd, err, out))
		}
	}
	for k, v := range h.Sysctls {
		if cur, err := readSysctl(k); err == nil && cur == v {
			continue
		}
		if err := os.WriteFile(sysctlPath(k), []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("node: restore sysctl %s=%s: %w", k, v, err))
		}
	}
	return errors.Join(errs...)
}

// Diff lists what differs between h and the host now, one line each, and
// the processes of the run still alive: empty when the host is as h
// recorded it.
func (h *Host) Diff() ([]string, error) {
	now, err := Snapshot(h.BinDir)
	if err != nil {
		return nil, err
	}
	var diff []string
	for _, k := range Sysctls {
		if now.Sysctls[k] != h.Sysctls[k] {
			diff = append(diff, fmt.Sprintf("sysctl %s is %s, was %s", k, now.Sysctls[k], h.Sysctls[k]))
		}
	}
	for _, cmd := range iptablesCommands {
		if now.IPTables[cmd] != h.IPTables[cmd] {
			diff = append(diff, cmd+" rules differ:\n"+now.IPTables[cmd])
		}
	}
	for _, m := range added(h.Mounts, now.Mounts) {
		diff = append(diff, "mount left: "+m)
	}
	for _, c := range added(h.Cgroups, now.Cgroups) {
		diff = append(diff, "cgroup left: "+c)
	}
	for _, l := range added(h.Links, now.Links) {
		diff = append(diff, "network link left: "+l)
	}
	for _, p := range HostPaths {
		if now.Paths[p] && !h.Paths[p] {
			diff = append(diff, "directory left: "+p)
		}
	}
	diff = append(diff, h.createdLeft()...)
	procs, err := runProcesses(h.BinDir)
	if err != nil {
		return nil, err
	}
	for _, p := range procs {
		diff = append(diff, fmt.Sprintf("process left: %d %s", p.pid, p.what))
	}
	return diff, nil
}

// Recover restores the host recorded at path by a run that ended before
// its cleanup, and removes the record. A missing record is no error.
func Recover(path string) error {
	h, err := LoadHost(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := h.Restore(); err != nil {
		return fmt.Errorf("node: restoring the host a previous run recorded in %s: %w", path, err)
	}
	return os.Remove(path)
}

func sysctlPath(key string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
}

func readSysctl(key string) (string, error) {
	data, err := os.ReadFile(sysctlPath(key))
	if err != nil {
		return "", fmt.Errorf("node: sysctl %s: %w", key, err)
	}
	return strings.TrimSpace(string(data)), nil
}

// normaliseRules drops iptables-save's comment lines (a timestamp each)
// and packet counters, which change with no rule changing.
func normaliseRules(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		if strings.HasPrefix(line, ":") {
			if i := strings.LastIndex(line, " ["); i > 0 {
				line = line[:i]
			}
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// tables lists the tables an iptables-save output holds.
func tables(rules string) []string {
	var out []string
	for _, line := range strings.Split(rules, "\n") {
		if t, ok := strings.CutPrefix(line, "*"); ok {
			out = append(out, t)
		}
	}
	return out
}

// mountPoints lists the mount points of this mount namespace in mount
// order (/proc/self/mountinfo, field 5).
func mountPoints() ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 4 {
			out = append(out, unescapeMount(f[4]))
		}
	}
	return out, sc.Err()
}

// unescapeMount decodes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmount detaches every mount point made since the snapshot, newest
// first. A mount below another new one goes with it (MNT_DETACH).
func (h *Host) unmount() error {
	now, err := mountPoints()
	if err != nil {
		return err
	}
	// Count occurrences: a path mounted twice (a bind over itself) must be
	// unmounted as many times as it gained.
	before := map[string]int{}
	for _, m := range h.Mounts {
		before[m]++
	}
	var extra []string
	seen := map[string]int{}
	for _, m := range now {
		seen[m]++
		if seen[m] > before[m] {
			extra = append(extra, m)
		}
	}
	var errs []error
	for i := len(extra) - 1; i >= 0; i-- {
		err := unix.Unmount(extra[i], unix.MNT_DETACH)
		if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("node: unmount %s: %w", extra[i], err))
		}
	}
	return errors.Join(errs...)
}

// cgroupRoots are the mounted cgroup hierarchies (v1 controllers and the
// v2 mount), from /proc/self/mountinfo.
func cgroupRoots() ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var roots []string
	for _, line := range strings.Split(string(data), "\n") {
		_, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f := strings.Fields(line)
		if pf := strings.Fields(post); len(pf) > 0 && (pf[0] == "cgroup" || pf[0] == "cgroup2") {
			roots = append(roots, unescapeMount(f[4]))
		}
	}
	return roots, nil
}

// topCgroups lists the directories directly below each hierarchy's root,
// where a kubelet with the cgroupfs driver creates kubepods.
func topCgroups() ([]string, error) {
	roots, err := cgroupRoots()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range roots {
		entries, err := os.ReadDir(r)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				out = append(out, filepath.Join(r, e.Name()))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// removeCgroups removes every cgroup made below a hierarchy's root since
// the snapshot, children first (a cgroup is removed with rmdir, and only
// once it is empty of processes and children).
func (h *Host) removeCgroups() error {
	now, err := topCgroups()
	if err != nil {
		return err
	}
	var errs []error
	for _, top := range added(h.Cgroups, now) {
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := rmdirRetry(dirs[i]); err != nil {
				errs = append(errs, fmt.Errorf("node: remove cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// rmdirRetry removes an empty cgroup, waiting (30 s at most) while the
// kernel still counts an exiting process in it (EBUSY).
func rmdirRetry(dir string) error {
	var err error
	for range 300 {
		err = syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func links() ([]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, i := range ifs {
		out = append(out, i.Name)
	}
	sort.Strings(out)
	return out, nil
}

// removeLinks deletes every network interface made since the snapshot:
// the CNI bridge, and any veth end whose pod namespace is already gone.
func (h *Host) removeLinks() error {
	now, err := links()
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range added(h.Links, now) {
		if out, err := exec.Command("ip", "link", "delete", l).CombinedOutput(); err != nil {
			// A veth goes by itself once its peer's namespace is gone.
			if _, serr := net.InterfaceByName(l); serr == nil {
				errs = append(errs, fmt.Errorf("node: ip link delete %s: %w: %s", l, err, out))
			}
		}
	}
	return errors.Join(errs...)
}

// added returns the entries of now that before does not hold.
func added(before, now []string) []string {
	var out []string
	for _, n := range now {
		if !slices.Contains(before, n) {
			out = append(out, n)
		}
	}
	return out
}

// proc is a process of the run.
type proc struct {
	pid  int
	what string
}

// runProcesses lists the processes that belong to a node run: those
// running a binary from binDir (containerd, its shims, the kubelet) and
// those in a kubepods cgroup (every container's, the pause processes
// included).
func runProcesses(binDir string) ([]proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		switch {
		case binDir != "" && exe != "" && strings.HasPrefix(exe, binDir+"/"):
			out = append(out, proc{pid, exe})
		case bytes.Contains(cg, []byte("/kubepods")):
			out = append(out, proc{pid, fmt.Sprintf("%s in a kubepods cgroup", exe)})
		}
	}
	return out, nil
}

// killRunProcesses SIGKILLs every process of the run and waits (30 s at
// most) until none is left.
func killRunProcesses(binDir string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		procs, err := runProcesses(binDir)
		if err != nil {
			return err
		}
		if len(procs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var names []string
			for _, p := range procs {
				names = append(names, fmt.Sprintf("%d (%s)", p.pid, p.what))
			}
			return fmt.Errorf("node: processes still alive after SIGKILL: %s", strings.Join(names, ", "))
		}
		for _, p := range procs {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
