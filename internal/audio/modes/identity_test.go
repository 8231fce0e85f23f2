// SPDX-License-Identifier: Apache-2.0

package modes

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// listen binds a unix socket at path, standing in for a PipeWire; with
// hangUp it closes every connection it accepts, as a PipeWire on its way
// out does.
func listen(t *testing.T, path string, hangUp bool) *net.UnixListener {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(true)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if hangUp {
				c.Close()
				continue
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return l
}

func identityOf(t *testing.T, path string) pipeWireIdentity {
	t.Helper()
	id, ok := currentPipeWire(context.Background(), path)
	if !ok {
		t.Fatalf("no server at %s", path)
	}
	return id
}

func TestNextPipeWire(t *testing.T) {
	dir, err := os.MkdirTemp("", "id")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, SocketName)
	ctx := context.Background()

	t.Run("the same PipeWire still serving", func(t *testing.T) {
		l := listen(t, path, false)
		known := identityOf(t, path)
		began := time.Now()
		id, how := nextPipeWire(ctx, path, known, true, time.Minute)
		if how != samePipeWire || id != known {
			t.Fatalf("got %v %v, want the same PipeWire", how, id)
		}
		if took := time.Since(began); took < holdFor {
			t.Fatalf("judged the same after %v, before holding a connection for %v", took, holdFor)
		}
		l.Close()
	})

	t.Run("replaced", func(t *testing.T) {
		l := listen(t, path, false)
		known := identityOf(t, path)
		l.Close() // unlinks
		go func() {
			time.Sleep(300 * time.Millisecond)
			listen(t, path, false)
		}()
		id, how := nextPipeWire(ctx, path, known, true, time.Minute)
		if how != newPipeWire || id == known {
			t.Fatalf("got %v %v, want a new PipeWire (old %v)", how, id, known)
		}
		if id != identityOf(t, path) {
			t.Fatal("reported identity is not the socket's")
		}
	})

	t.Run("the known one on its way out, then a new one", func(t *testing.T) {
		os.Remove(path)
		dying := listen(t, path, true)
		known := identityOf(t, path)
		go func() {
			time.Sleep(time.Second)
			dying.Close()
			listen(t, path, false)
		}()
		id, how := nextPipeWire(ctx, path, known, true, time.Minute)
		if how != newPipeWire || id == known {
			t.Fatalf("got %v %v: a PipeWire that hangs up was taken for the serving one", how, id)
		}
	})

	t.Run("none known: any PipeWire is new", func(t *testing.T) {
		listen(t, path, false)
		id, how := nextPipeWire(ctx, path, pipeWireIdentity{}, false, time.Minute)
		if how != newPipeWire || id != identityOf(t, path) {
			t.Fatalf("got %v %v", how, id)
		}
	})

	t.Run("none within the limit", func(t *testing.T) {
		empty := filepath.Join(dir, "pipewire-1")
		began := time.Now()
		if _, how := nextPipeWire(ctx, empty, pipeWireIdentity{}, false, 700*time.Millisecond); how != noPipeWire {
			t.Fatalf("got %v with no socket", how)
		}
		// Without a limit it would wait for ever; a slow host only
		// makes it later.
		if took := time.Since(began); took < 700*time.Millisecond || took > 30*time.Second {
			t.Fatalf("gave up after %v, limit 700ms", took)
		}
	})

	t.Run("called off", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(200*time.Millisecond, cancel)
		began := time.Now()
		if _, how := nextPipeWire(ctx, filepath.Join(dir, "pipewire-1"), pipeWireIdentity{}, false, time.Minute); how != noPipeWire {
			t.Fatalf("got %v", how)
		}
		// Only the limit (a minute) ends it this late; a slow host does not.
		if took := time.Since(began); took > 30*time.Second {
			t.Fatalf("returned %v after the call-off", took)
		}
	})
}
