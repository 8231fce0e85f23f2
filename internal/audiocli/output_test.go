// SPDX-License-Identifier: Apache-2.0

package audiocli

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	certutil "k8s.io/client-go/util/cert"

	"github.com/liken-sh/operators/test/poll"
)

// lockedBuffer is a bytes.Buffer the test reads while a command writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Len()
}

// fakeAudioAPI starts an API server that serves ConfigMap audio-api-ca
// and an audio-api that answers every tap with body, or, when cut, with
// the first half of it under a Content-Length of the whole. It returns
// the flags that point the plugin at both.
func fakeAudioAPI(t *testing.T, body []byte, cut bool) []string {
	t.Helper()
	return fakeTap(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if cut {
			_, _ = w.Write(body[:len(body)/2])
			return
		}
		_, _ = w.Write(body)
	}))
}

// fakeTap is fakeAudioAPI with an audio-api that answers every tap with
// tap.
func fakeTap(t *testing.T, handler http.Handler) []string {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(apiService+"."+DefaultNamespace+".svc", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	tap := httptest.NewUnstartedServer(handler)
	tap.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	tap.StartTLS()
	t.Cleanup(tap.Close)
	cm, err := json.Marshal(map[string]any{
		"kind": "ConfigMap", "apiVersion": "v1",
		"metadata": map[string]string{"name": caConfigMap, "namespace": DefaultNamespace},
		"data":     map[string]string{"ca.crt": string(certPEM)},
	})
	if err != nil {
		t.Fatal(err)
	}
	kube := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/namespaces/"+DefaultNamespace+"/configmaps/"+caConfigMap {
			_, _ = w.Write(cm)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
	}))
	t.Cleanup(kube.Close)
	t.Setenv("KUBECONFIG", "")
	return []string{"--server", kube.URL, "--api-address", strings.TrimPrefix(tap.URL, "https://"), "--force", "capture", "kitchen-hdmi-3"}
}

// capture runs the plugin against a fake audio-api answering with body,
// writing to -o out.
func capture(t *testing.T, body []byte, out string, extra ...string) (int, string) {
	t.Helper()
	return run(t, append(append(fakeAudioAPI(t, body, false), "-o", out), extra...)...)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustLstat(t *testing.T, path string) fs.FileInfo {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// withUmask runs the test under umask m, so that the mode a create gives
// is known.
func withUmask(t *testing.T, m int) {
	old := syscall.Umask(m)
	t.Cleanup(func() { syscall.Umask(old) })
}

// A new file gets the mode an ordinary create gives, 0666 less the
// umask, not a temporary file's 0600, and the success line names it.
func TestCaptureOutputNewFileMode(t *testing.T) {
	withUmask(t, 0o027)
	out := filepath.Join(t.TempDir(), "now.wav")
	code, msg := capture(t, []byte("new audio"), out)
	if code != 0 || !strings.Contains(msg, "9 bytes of audio/wav to "+out+"\n") {
		t.Fatalf("exit %d, %q; want 0 and the path named", code, msg)
	}
	if fi := mustLstat(t, out); fi.Mode() != 0o640 || string(mustRead(t, out)) != "new audio" {
		t.Errorf("%s: mode %v, %q; want -rw-r----- and the capture", out, fi.Mode(), mustRead(t, out))
	}
}

// A regular file is replaced whole, and keeps its mode.
func TestCaptureOutputReplacedFileKeepsMode(t *testing.T) {
	withUmask(t, 0o022)
	out := filepath.Join(t.TempDir(), "now.wav")
	if err := os.WriteFile(out, []byte("an older, longer capture"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(out, 0o664); err != nil {
		t.Fatal(err)
	}
	// As root (as CI runs) the owner is kept too: nobody's file stays
	// nobody's.
	if os.Geteuid() == 0 {
		if err := os.Chown(out, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	was := mustLstat(t, out).Sys().(*syscall.Stat_t)
	if code, msg := capture(t, []byte("new audio"), out); code != 0 {
		t.Fatalf("exit %d, %q", code, msg)
	}
	fi := mustLstat(t, out)
	if fi.Mode() != 0o664 || string(mustRead(t, out)) != "new audio" {
		t.Errorf("%s: mode %v, %q; want -rw-rw-r-- and the capture alone", out, fi.Mode(), mustRead(t, out))
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != was.Uid || st.Gid != was.Gid {
		t.Errorf("%s: owner %d:%d, want %d:%d as before", out, st.Uid, st.Gid, was.Uid, was.Gid)
	}
}

// A capture cut short leaves the file that was there as it was, and no
// temporary file beside it.
func TestCaptureOutputCutShortLeavesTheFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "now.wav")
	if err := os.WriteFile(out, []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, msg := run(t, append(fakeAudioAPI(t, make([]byte, 1000), true), "-o", out, "-t", "0,5")...)
	if code != 1 || !strings.Contains(msg, "cut short after 500 bytes") {
		t.Fatalf("exit %d, %q; want 1 and the cut", code, msg)
	}
	if b := mustRead(t, out); string(b) != "kept" {
		t.Errorf("%s holds %q, want the file as it was", out, b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%s holds %d entries, want now.wav alone", dir, len(ents))
	}
}

// A symbolic link is followed: the file it points at gets the capture
// and keeps its mode, the link stays a link.
func TestCaptureOutputFollowsSymlink(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "real.wav"), filepath.Join(dir, "link.wav")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.wav", link); err != nil {
		t.Fatal(err)
	}
	code, msg := capture(t, []byte("new audio"), link)
	if code != 0 || !strings.Contains(msg, "to "+link+" ("+target+")") {
		t.Fatalf("exit %d, %q; want 0 and both names", code, msg)
	}
	if fi := mustLstat(t, link); fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("%s is %v, want the symlink kept", link, fi.Mode())
	}
	if fi := mustLstat(t, target); fi.Mode() != 0o644 || string(mustRead(t, target)) != "new audio" {
		t.Errorf("%s: mode %v, %q; want -rw-r--r-- and the capture", target, fi.Mode(), mustRead(t, target))
	}
}

// A dangling symbolic link is followed to the name it points at, which
// is created.
func TestCaptureOutputDanglingSymlinkCreatesTarget(t *testing.T) {
	withUmask(t, 0o022)
	dir := t.TempDir()
	target, link := filepath.Join(dir, "sub", "new.wav"), filepath.Join(dir, "link.wav")
	if err := os.Mkdir(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/new.wav", link); err != nil {
		t.Fatal(err)
	}
	if code, msg := capture(t, []byte("new audio"), link); code != 0 {
		t.Fatalf("exit %d, %q", code, msg)
	}
	if fi := mustLstat(t, link); fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("%s is %v, want the symlink kept", link, fi.Mode())
	}
	if fi := mustLstat(t, target); fi.Mode() != 0o644 || string(mustRead(t, target)) != "new audio" {
		t.Errorf("%s: mode %v; want a new -rw-r--r-- file with the capture", target, fi.Mode())
	}
}

// A directory, or a link to one, is refused before anything is dialled,
// and is left as it was.
func TestCaptureOutputDirectoryRefused(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "to-dir")
	if err := os.Symlink(".", link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{dir, link} {
		code, msg := capture(t, []byte("new audio"), out)
		if code != 1 || msg != "error: -o "+out+": is a directory\n" {
			t.Errorf("-o %s: exit %d, %q; want 1 and is a directory", out, code, msg)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%s holds %d entries, want the link alone", dir, len(ents))
	}
}

// -o "" is refused, naming the flag, rather than taken as stdout.
func TestCaptureOutputEmptyRefused(t *testing.T) {
	code, msg := capture(t, []byte("new audio"), "")
	if code != 1 || !strings.Contains(msg, `error: -o "": the path is empty`) {
		t.Errorf(`-o "": exit %d, %q; want 1 and the flag named`, code, msg)
	}
}

// A character device is written into and stays a device: the one real
// device node a test touches is /dev/null.
func TestCaptureOutputDevNull(t *testing.T) {
	code, msg := capture(t, streamedWAV(100), "/dev/null")
	if code != 0 || !strings.Contains(msg, "to /dev/null\n") {
		t.Errorf("exit %d, %q; want 0", code, msg)
	}
	if fi := mustLstat(t, "/dev/null"); fi.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is now %v", fi.Mode())
	}
}

// A FIFO is written into, not replaced: its reader gets the stream as
// sent (a WAV's streamed header is not rewritten, which a pipe cannot
// take), and a symlink to it is followed.
func TestCaptureOutputFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo, link := filepath.Join(dir, "pipe"), filepath.Join(dir, "link")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("pipe", link); err != nil {
		t.Fatal(err)
	}
	body := streamedWAV(1000)
	for _, out := range []string{fifo, link} {
		got := make(chan []byte, 1)
		go func() {
			// Blocks until the plugin opens the FIFO; a plugin that
			// replaced it never does, and the wait below gives up.
			f, err := os.Open(fifo)
			if err != nil {
				got <- []byte(err.Error())
				return
			}
			defer f.Close()
			b, _ := io.ReadAll(f)
			got <- b
		}()
		code, msg := capture(t, body, out)
		if code != 0 {
			t.Errorf("-o %s: exit %d, %q", out, code, msg)
		}
		select {
		case b := <-got:
			if !bytes.Equal(b, body) {
				t.Errorf("-o %s: the reader got %d bytes, want the %d sent", out, len(b), len(body))
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("-o %s: the FIFO's reader got nothing", out)
		}
		if fi := mustLstat(t, fifo); fi.Mode()&fs.ModeNamedPipe == 0 {
			t.Fatalf("%s is now %v, want the FIFO kept", fifo, fi.Mode())
		}
	}
}

// Ctrl-C while a span's tap has sent the WAV header and waits for the
// span to begin says the capture was interrupted before any audio
// arrived, and what was written: the header alone on stdout, nothing at
// -o (the file there is as it was). The exit status stays 1.
func TestCaptureInterruptedBeforeTheSpan(t *testing.T) {
	header := make([]byte, 44)
	for _, toFile := range []bool{false, true} {
		sent := make(chan struct{}, 1)
		args := fakeTap(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "audio/wav")
			_, _ = w.Write(header)
			w.(http.Flusher).Flush()
			sent <- struct{}{}
			<-r.Context().Done()
		}))
		args = append(args, "-t", "30,40")
		out := filepath.Join(t.TempDir(), "now.wav")
		if toFile {
			if err := os.WriteFile(out, []byte("kept"), 0o644); err != nil {
				t.Fatal(err)
			}
			args = append(args, "-o", out)
		}
		ctx, interrupt := context.WithCancel(context.Background())
		var stdout lockedBuffer
		var stderr bytes.Buffer
		done := make(chan int, 1)
		go func() {
			done <- Execute(ctx, "v1.2.3", genericiooptions.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr}, args)
		}()
		select {
		case <-sent:
		case code := <-done:
			t.Fatalf("-o %v: exit %d before the tap sent the header: %q", toFile, code, stderr.String())
		}
		// Ctrl-C comes once the header has been written out: to stdout,
		// or to the temporary file beside -o's.
		poll.Until(t, "the header written", 30*time.Second, func() bool {
			if !toFile {
				return stdout.Len() == len(header)
			}
			temps, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".*"))
			for _, name := range temps {
				if fi, err := os.Stat(name); err == nil && fi.Size() == int64(len(header)) {
					return true
				}
			}
			return false
		})
		interrupt()
		code := <-done
		msg := stderr.String()
		want := "the capture was interrupted before any audio arrived (the span begins 30s in"
		if code != 1 || !strings.Contains(msg, want) || strings.Contains(msg, "cut short") || strings.Contains(msg, "context canceled") {
			t.Errorf("-o %v: exit %d, %q; want 1 and %q", toFile, code, msg, want)
		}
		if toFile {
			if b := mustRead(t, out); string(b) != "kept" || !strings.Contains(msg, "nothing was written to "+out) {
				t.Errorf("%s holds %q, message %q; want the file as it was, and said so", out, b, msg)
			}
		} else if stdout.Len() != 44 || !strings.Contains(msg, "the 44 bytes on stdout are the audio/wav header alone") {
			t.Errorf("stdout has %d bytes, message %q; want the 44-byte header, and said so", stdout.Len(), msg)
		}
	}
}
