// SPDX-License-Identifier: Apache-2.0

package modes

// A headless PipeWire (and WirePlumber) sandbox for these tests, after
// a private runtime directory, configuration drop-ins under
// a private XDG_CONFIG_HOME, no session bus, no D-Bus support in PipeWire,
// WirePlumber's ALSA, MIDI, Bluetooth and camera monitors off.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/liken-sh/operators/test/poll"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/liken-sh/operators/internal/supervise"
)

type sandbox struct {
	dir         string // short: the socket path must fit in 107 bytes
	run         string // PIPEWIRE_RUNTIME_DIR and XDG_RUNTIME_DIR
	declaration string // the node declaration, in PipeWire's drop-in directory
	env         []string
	logs        []string // files dumped when a test fails
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	dir, err := os.MkdirTemp("", "pw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &sandbox{dir: dir, run: filepath.Join(dir, "run")}
	xdg := filepath.Join(dir, "xdg")
	pwConf := filepath.Join(xdg, "pipewire", "pipewire.conf.d")
	wpConf := filepath.Join(xdg, "wireplumber", "wireplumber.conf.d")
	for _, d := range []string{s.run, pwConf, wpConf, filepath.Join(dir, "state")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s.declaration = filepath.Join(pwConf, "60-liken-outputs.conf")
	writeFile(t, filepath.Join(pwConf, "10-test.conf"), "context.properties = { support.dbus = false }\n")
	writeFile(t, filepath.Join(wpConf, "10-headless.conf"), `wireplumber.profiles = {
  main-embedded = {
    monitor.alsa = disabled
    monitor.alsa-midi = disabled
    hardware.bluetooth = disabled
    hardware.video-capture = disabled
    support.dbus = disabled
  }
}
`)
	s.env = []string{
		"PATH=/usr/bin:/bin",
		"HOME=" + dir,
		EnvPipeWireRuntimeDir + "=" + s.run,
		EnvXDGRuntimeDir + "=" + s.run,
		"XDG_CONFIG_HOME=" + xdg,
		"XDG_STATE_HOME=" + filepath.Join(dir, "state"),
		"DBUS_SESSION_BUS_ADDRESS=disabled:",
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range s.logs {
				data, _ := os.ReadFile(l)
				t.Logf("%s, last lines:\n%s", filepath.Base(l), lastLines(string(data), 30))
			}
		}
	})
	return s
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (s *sandbox) socket() string { return filepath.Join(s.run, SocketName) }

// declare writes the declaration with one null sink named node, the way
// a writer that replaces the file does: a new file renamed over the old.
func (s *sandbox) declare(t *testing.T, node string) {
	t.Helper()
	tmp := s.declaration + ".tmp"
	writeFile(t, tmp, fmt.Sprintf(`context.objects = [
  { factory = adapter
    args = {
      factory.name = support.null-audio-sink
      node.name = %q
      media.class = Audio/Sink
      audio.position = [ FL FR ]
    }
  }
]
`, node))
	if err := os.Rename(tmp, s.declaration); err != nil {
		t.Fatal(err)
	}
}

// logFile opens a log file in the sandbox, dumped if the test fails.
func (s *sandbox) logFile(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(s.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	s.logs = append(s.logs, f.Name())
	return f
}

// env returns the sandbox environment plus extra entries.
func (s *sandbox) environ(extra ...string) []string {
	return append(append([]string{}, s.env...), extra...)
}

// proc is a started process with its exit observed.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// start starts a process in the sandbox's environment, logging to name,
// and kills it when the test ends.
func (s *sandbox) start(t *testing.T, name string, path string, args []string, extra ...string) *proc {
	t.Helper()
	log := s.logFile(t, name+".log")
	cmd := exec.Command(path, args...)
	cmd.Env = s.environ(extra...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		// The whole group: a helper's PipeWire or WirePlumber too.
		unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		<-p.done
	})
	return p
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits for the process to end and returns its exit code (128+signal
// for a signal death).
func (p *proc) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("%s did not exit within %v", p.cmd.Path, within)
	}
	return supervise.StatusOf(p.cmd.ProcessState).ExitCode()
}

// helper starts the test binary in role, as a container would start the
// mode: its own process, signalled from outside.
func (s *sandbox) helper(t *testing.T, role string, extra ...string) *proc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return s.start(t, role, self, nil, append([]string{roleEnv + "=" + role, declarationEnv + "=" + s.declaration}, extra...)...)
}

// eventually polls cond every 20 ms until it holds or within passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, within, cond)
}

// childrenOf lists the live processes whose parent is pid and whose
// command name is comm (from /proc/<pid>/stat; zombies excluded).
func childrenOf(pid int, comm string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		open, close := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
		if open < 0 || close < open {
			continue
		}
		fields := strings.Fields(string(data[close+1:]))
		if len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == pid && string(data[open+1:close]) == comm {
			out = append(out, child)
		}
	}
	return out
}

// onlyChild waits for exactly one live child of pid named comm other than
// not, and returns it.
func onlyChild(t *testing.T, pid int, comm string, not int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := childrenOf(pid, comm)
		if len(got) == 1 && got[0] != not {
			return got[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("want one %s child of %d other than %d, have %v", comm, pid, not, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	return i > 0 && len(data) > i+2 && data[i+2] != 'Z'
}

// graph is what the tests read of a pw-dump.
type graph struct {
	nodes   []string // node.name of every node
	clients []int    // pipewire.sec.pid of every client: its process
}

var dumpMu sync.Mutex

// dump runs pw-dump in the sandbox and reads it; ok is false when pw-dump
// fails.
func (s *sandbox) dump() (graph, bool) {
	dumpMu.Lock()
	defer dumpMu.Unlock()
	cmd := exec.Command(DefaultPwDump)
	cmd.Env = s.environ()
	out, err := cmd.Output()
	if err != nil {
		return graph{}, false
	}
	var objects []struct {
		Type string `json:"type"`
		Info struct {
			Props map[string]any `json:"props"`
		} `json:"info"`
	}
	if err := json.Unmarshal(out, &objects); err != nil {
		return graph{}, false
	}
	var g graph
	for _, o := range objects {
		switch o.Type {
		case "PipeWire:Interface:Node":
			if n, ok := o.Info.Props["node.name"].(string); ok {
				g.nodes = append(g.nodes, n)
			}
		case "PipeWire:Interface:Client":
			if pid, ok := o.Info.Props["pipewire.sec.pid"].(float64); ok {
				g.clients = append(g.clients, int(pid))
			}
		}
	}
	return g, true
}

func contains[T comparable](list []T, s T) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// socketID reads the identity of the socket file now.
func (s *sandbox) socketID(t *testing.T) pipeWireIdentity {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(s.socket(), &st); err != nil {
		t.Fatal(err)
	}
	return pipeWireIdentity{dev: st.Dev, ino: st.Ino, ctime: st.Ctim}
}

// socketMtime is the socket file's modification time.
func (s *sandbox) socketMtime(t *testing.T) time.Time {
	t.Helper()
	fi, err := os.Stat(s.socket())
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

// syncWriter serialises writes from a mode's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
