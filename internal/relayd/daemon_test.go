// SPDX-License-Identifier: Apache-2.0

package relayd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/evdev"
)

// snapshot is a pad's one input device.
func snapshot() evdev.Capabilities {
	return evdev.Capabilities{
		Name: "Wireless Controller", ID: evdev.ID{Bus: 5, Vendor: 0x054c, Product: 0x09cc},
		Keys: []uint16{0x130, 0x131},
		Abs:  []evdev.Axis{{Code: 0, AbsInfo: evdev.AbsInfo{Value: 128, Maximum: 255}}},
	}
}

func TestParseState(t *testing.T) {
	good, _ := json.Marshal(state{
		Snapshots: map[string][]evdev.Capabilities{"A4:C1:38:0E:5F:21": {snapshot()}},
		Claims:    map[string]string{"c0ffee00-0000-4000-8000-000000000002": "A4:C1:38:0E:5F:21"},
	})
	st, err := parseState(good)
	if err != nil || len(st.Claims) != 1 || len(st.Snapshots["A4:C1:38:0E:5F:21"]) != 1 {
		t.Fatalf("parseState(good) = %+v, %v", st, err)
	}
	for _, c := range []struct{ data, want string }{
		{`{"snapshots":{"a4:c1:38:0e:5f:21":[]}}`, "BlueZ's spelling"},
		{`{"snapshots":{"not an address":[]}}`, "not an address"},
		{`{"snapshots":{"A4:C1:38:0E:5F:21":[{"name":""}]}}`, "device 0"},
		{`{"claims":{"../x":"A4:C1:38:0E:5F:21"}}`, "not a UID"},
		{`{"claims":{"c0ffee":"A4:C1:38:0E:5F:21"}}`, "no snapshot"},
		{`{`, "relay state"},
		{strings.Repeat(" ", maxState+1), "bound"},
	} {
		if _, err := parseState([]byte(c.data)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parseState(%.40q) = %v, want an error about %q", c.data, err, c.want)
		}
	}
}

func FuzzParseState(f *testing.F) {
	good, _ := json.Marshal(state{
		Snapshots: map[string][]evdev.Capabilities{"A4:C1:38:0E:5F:21": {snapshot()}},
		Claims:    map[string]string{"c0ffee": "A4:C1:38:0E:5F:21"},
	})
	f.Add(good)
	f.Add([]byte(`{"claims":{"x":"y"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseState(data)
		if err != nil {
			return
		}
		for uid, address := range st.Claims {
			if !uidPattern.MatchString(uid) || len(st.Snapshots[address]) == 0 {
				t.Fatalf("claim %q on %q accepted", uid, address)
			}
		}
		for _, list := range st.Snapshots {
			for _, c := range list {
				if err := c.Validate(); err != nil {
					t.Fatalf("snapshot accepted that does not validate: %v", err)
				}
			}
		}
	})
}

// A state file that does not parse stops the daemon with its name, and
// is left as it is.
func TestNewRefusesBadState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	bad := []byte(`{"claims":{"c0ffee":"A4:C1:38:0E:5F:21"}}`)
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{StatePath: path}); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("New = %v, want an error naming %s", err, path)
	}
	if got, _ := os.ReadFile(path); string(got) != string(bad) {
		t.Errorf("the state file became %q", got)
	}
}

// The API refuses what is malformed with 400 and a controller it never
// saw with 409, each with a message that says which; nothing is made.
func TestHandlerRefuses(t *testing.T) {
	root := t.TempDir()
	d, err := New(Config{SysRoot: root, DevRoot: root, StatePath: filepath.Join(root, "state.json")})
	if err != nil {
		t.Fatal(err)
	}
	client := serve(t, d, filepath.Join(root, "relay.sock"))
	ctx := context.Background()
	for _, c := range []struct{ uid, address, want string }{
		{"c0ffee", "not an address", `controller address "not an address"`},
		{"bad uid!", "A4:C1:38:0E:5F:21", "not a UID"},
		{"c0ffee", "A4:C1:38:0E:5F:21", "has not connected"},
	} {
		if _, err := client.Attach(ctx, c.uid, c.address); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Attach(%q, %q) = %v, want an error about %q", c.uid, c.address, err, c.want)
		}
	}
	for _, body := range []string{`{"address":"A4:C1:38:0E:5F:21","extra":1}`, `not json`} {
		req, _ := http.NewRequest(http.MethodPut, "http://relay"+ClaimsPath+"c0ffee", strings.NewReader(body))
		resp, err := client.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("PUT %s: %d, want 400", body, resp.StatusCode)
		}
	}
	if err := client.Release(ctx, "c0ffee"); err != nil {
		t.Errorf("releasing a claim never made: %v", err)
	}
	st, err := client.Status(ctx)
	if err != nil || len(st) != 0 {
		t.Errorf("Status = %+v, %v; want nothing made", st, err)
	}
	if _, err := os.Stat(filepath.Join(root, "state.json")); !os.IsNotExist(err) {
		t.Errorf("a refused request wrote the state file (%v)", err)
	}
}

// A snapshot kept with a bond seeds the daemon; a bad one is refused with
// what is wrong; one the daemon already has is kept; and it is in the
// state file for the next start.
func TestSeedSnapshots(t *testing.T) {
	root := t.TempDir()
	cfg := Config{SysRoot: root, DevRoot: root, StatePath: filepath.Join(root, "state.json")}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	client := serve(t, d, filepath.Join(root, "relay.sock"))
	ctx := context.Background()
	bad := snapshot()
	bad.Keys = []uint16{0x400}
	for _, c := range []struct {
		address string
		snaps   []evdev.Capabilities
		want    string
	}{
		{"not an address", []evdev.Capabilities{snapshot()}, "not an address"},
		{"A4:C1:38:0E:5F:21", nil, "no input device"},
		{"A4:C1:38:0E:5F:21", []evdev.Capabilities{bad}, "input device 0: key: code 0x400"},
	} {
		if err := client.Seed(ctx, c.address, c.snaps); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Seed(%q) = %v, want an error about %q", c.address, err, c.want)
		}
	}
	if err := client.Seed(ctx, "a4:c1:38:0e:5f:21", []evdev.Capabilities{snapshot()}); err != nil {
		t.Fatal(err)
	}
	other := snapshot()
	other.Name = "Another Controller"
	if err := client.Seed(ctx, "A4:C1:38:0E:5F:21", []evdev.Capabilities{other}); err != nil {
		t.Fatal(err)
	}
	got, err := client.Snapshots(ctx)
	if err != nil || len(got) != 1 || len(got["A4:C1:38:0E:5F:21"]) != 1 || got["A4:C1:38:0E:5F:21"][0].Name != "Wireless Controller" {
		t.Fatalf("Snapshots = %+v, %v; want the first seed, kept", got, err)
	}
	d2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s := d2.Snapshots(); len(s["A4:C1:38:0E:5F:21"]) != 1 {
		t.Errorf("a daemon started again knows %+v", s)
	}
}

// serve serves d's API on a unix socket at socket until the test ends
// and returns a client of it.
func serve(t *testing.T, d *Daemon, socket string) *Client {
	t.Helper()
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: d.Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return NewClient(socket)
}

// put sends body to path and returns the status and the answer's text.
func put(t *testing.T, c *Client, path string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, "http://relay"+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(text)
}

// Bodies that are not one JSON value of the right shape and size are
// refused with 400 and a message saying what is wrong with them, and
// nothing is stored: not an empty body, a second value after the first,
// a body over the bound, an unknown field; nor a hostile UID or address
// in the path.
func TestHandlerRefusesBodies(t *testing.T) {
	root := t.TempDir()
	statePath := filepath.Join(root, "state.json")
	d, err := New(Config{SysRoot: root, DevRoot: root, StatePath: statePath})
	if err != nil {
		t.Fatal(err)
	}
	c := serve(t, d, filepath.Join(t.TempDir(), "relay.sock"))
	one, _ := json.Marshal([]evdev.Capabilities{snapshot()})
	for _, b := range []struct {
		path string
		body []byte
		want string
	}{
		{ClaimsPath + "c0ffee", nil, "body: empty"},
		{ClaimsPath + "c0ffee", []byte(`{"address":"A4:C1:38:0E:5F:21"} {"address":"00:11:22:33:44:55"}`), "data after the JSON value"},
		{ClaimsPath + "c0ffee", []byte(`{"address":"A4:C1:38:0E:5F:21"}` + strings.Repeat(" ", 4096)), "over the 4096-byte bound"},
		{ClaimsPath + "c0ffee", []byte(`{"address":"` + strings.Repeat("A", 8192) + `"}`), "over the 4096-byte bound"},
		{ClaimsPath + "c0ffee", []byte(`{"Address":"A4:C1:38:0E:5F:21","uid":"x"}`), `unknown field "uid"`},
		{ClaimsPath + "c0ffee", []byte(`null`), `controller address ""`},
		{SnapshotsPath + "A4:C1:38:0E:5F:21", nil, "body: empty"},
		{SnapshotsPath + "A4:C1:38:0E:5F:21", []byte(`null`), "no input device"},
		{SnapshotsPath + "A4:C1:38:0E:5F:21", append(slices.Clone(one), "[]"...), "data after the JSON value"},
		{SnapshotsPath + "A4:C1:38:0E:5F:21", append(slices.Clone(one), bytes.Repeat([]byte(" "), maxState)...), "over the 4194304-byte bound"},
		{SnapshotsPath + "A4:C1:38:0E:5F:21", []byte(`[{"name":"pad","buttons":[1]}]`), `unknown field "buttons"`},
		{SnapshotsPath + "A4:C1:38:0E:5F:21", []byte(`{"name":"pad"}`), "cannot unmarshal object"},
		{SnapshotsPath + "A4:C1:38:0E:5F:21", []byte(`[{"name":"pad","abs":[{"code":0,"value":0,"min":0,"max":1,"flat":2}]}]`), "input device 0: abs 0x0: flat 2 is wider than the range 0..1"},
		{SnapshotsPath + "..%2F..%2Fetc", one, `controller address "../../etc"`},
		{ClaimsPath + "..%2Fstate.json", []byte(`{"address":"A4:C1:38:0E:5F:21"}`), `claim UID "../state.json" is not a UID`},
		{ClaimsPath + "c0ffee%0Aforged", []byte(`{"address":"A4:C1:38:0E:5F:21"}`), `claim UID "c0ffee\nforged" is not a UID`},
	} {
		code, text := put(t, c, b.path, b.body)
		if code != http.StatusBadRequest || !strings.Contains(text, b.want) {
			t.Errorf("PUT %s %.60q: %d %q, want 400 about %q", b.path, b.body, code, text, b.want)
		}
	}
	if _, err := os.Stat(statePath); !os.IsNotExist(err) {
		t.Errorf("a refused request wrote the state file (%v)", err)
	}
	if s := d.Snapshots(); len(s) != 0 {
		t.Errorf("refused requests left snapshots %v", s)
	}
}

// bigDevice is an input device with every key code and every axis at its
// widest: about the largest snapshot entry evdev's checks let through.
func bigDevice(name string) evdev.Capabilities {
	caps := evdev.Capabilities{Name: name, ID: evdev.ID{Bus: 5, Vendor: 0xffff, Product: 0xffff, Version: 0xffff}}
	for code := uint16(0); code <= evdev.KeyMax; code++ {
		caps.Keys = append(caps.Keys, code)
	}
	for code := uint16(0); code <= evdev.AbsMax; code++ {
		a := evdev.AbsInfo{Minimum: -2147483648, Maximum: 2147483647, Fuzz: 2147483647, Flat: 2147483647, Resolution: 2147483647}
		if code == evdev.AbsMTSlot {
			a = evdev.AbsInfo{Maximum: 99, Flat: 99}
		}
		caps.Abs = append(caps.Abs, evdev.Axis{Code: code, AbsInfo: a})
	}
	return caps
}

// An absurd snapshot (10,000 input devices for one controller) is
// refused with the count; snapshots that would take the state file over
// its bound are refused once they would, and not kept; what was stored
// before stays, and a daemon started again reads it all.
func TestSeedBounds(t *testing.T) {
	root := t.TempDir()
	cfg := Config{SysRoot: root, DevRoot: root, StatePath: filepath.Join(root, "state.json")}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := serve(t, d, filepath.Join(t.TempDir(), "relay.sock"))
	ctx := context.Background()
	many := make([]evdev.Capabilities, 10000)
	for i := range many {
		many[i] = evdev.Capabilities{Name: "x"}
	}
	if err := c.Seed(ctx, "A4:C1:38:0E:5F:21", many); err == nil || !strings.Contains(err.Error(), "10000 input devices") {
		t.Errorf("Seed of 10,000 devices = %v, want a refusal naming the count", err)
	}
	if s := d.Snapshots(); len(s) != 0 {
		t.Errorf("a refused seed left %d snapshots", len(s))
	}

	full := make([]evdev.Capabilities, 16)
	for i := range full {
		full[i] = bigDevice(fmt.Sprintf("device %d", i))
	}
	var refused string
	var stored []string
	for i := 1; i < 1000 && refused == ""; i++ {
		address := fmt.Sprintf("00:00:00:00:%02X:%02X", i>>8, i&0xff)
		err := c.Seed(ctx, address, full)
		switch {
		case err == nil:
			stored = append(stored, address)
		case strings.Contains(err.Error(), "bound"):
			refused = address
		default:
			t.Fatalf("Seed(%s) = %v", address, err)
		}
	}
	if refused == "" {
		t.Error("no seed was refused: the state file has no bound")
	}
	if s := d.Snapshots(); len(s) != len(stored) || len(s[refused]) != 0 {
		t.Errorf("after the refusal the daemon holds %d snapshots (%d stored), %d devices of %s", len(s), len(stored), len(s[refused]), refused)
	}
	again, err := New(cfg)
	if err != nil {
		t.Fatalf("a daemon started on the state the first one wrote: %v", err)
	}
	if s := again.Snapshots(); len(s) != len(stored) {
		t.Errorf("a daemon started again knows %d controllers, want the %d stored", len(s), len(stored))
	}
}

// A state file with more devices for one controller than a snapshot may
// have is refused, naming the controller.
func TestParseStateDeviceBound(t *testing.T) {
	list := make([]evdev.Capabilities, 17)
	for i := range list {
		list[i] = snapshot()
	}
	data, _ := json.Marshal(state{Snapshots: map[string][]evdev.Capabilities{"A4:C1:38:0E:5F:21": list}})
	if _, err := parseState(data); err == nil || !strings.Contains(err.Error(), "A4:C1:38:0E:5F:21 has 17 input devices") {
		t.Errorf("parseState of %d devices = %v", len(list), err)
	}
}

// A relay that takes the connection and never answers fails the call at
// the client's bound instead of holding it.
func TestClientBoundsASilentRelay(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "relay.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	client := NewClient(socket)
	client.http.Timeout = 200 * time.Millisecond
	done := make(chan error, 1)
	go func() {
		_, err := client.Attach(context.Background(), "c0ffee", "A4:C1:38:0E:5F:21")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "input relay at "+socket) {
			t.Errorf("Attach to a silent relay = %v, want an error naming the relay", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Attach to a silent relay did not return within a minute")
	}
}
