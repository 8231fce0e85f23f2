// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package relayd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/liken-sh/operators/internal/evdev"
	"github.com/liken-sh/operators/internal/hid"
	"github.com/liken-sh/operators/internal/uevent"
)

// The API's paths. A claim's devices are PUT (made) and DELETEd
// (destroyed) at ClaimsPath + its UID; GET ClaimsPath lists them all.
// Controllers' snapshots are read at SnapshotsPath and seeded with a PUT
// at SnapshotsPath + the address.
const (
	ClaimsPath    = "/v1/claims/"
	SnapshotsPath = "/v1/snapshots/"
)

// attachRequest is the body of a PUT.
type attachRequest struct {
	Address string `json:"address"`
}

// Handler serves the daemon's API:
//
//	PUT    /v1/claims/{uid}  {"address": "A4:C1:38:0E:5F:21"} -> 200 ClaimStatus
//	DELETE /v1/claims/{uid}                                  -> 204
//	GET    /v1/claims/                                       -> 200 {uid: ClaimStatus}
//	GET    /v1/snapshots/                                    -> 200 {address: [evdev.Capabilities]}
//	PUT    /v1/snapshots/{address}  [evdev.Capabilities]     -> 204 (kept if one is known)
//
// Errors are 400 for a malformed request, 409 for a controller the daemon
// has no snapshot of (ErrNoSnapshot) or a claim held for another
// controller, and 500 otherwise, each with the error's text as the body.
func (d *Daemon) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT "+ClaimsPath+"{uid}", func(w http.ResponseWriter, r *http.Request) {
		var req attachRequest
		if err := decodeBody(w, r, maxAttachBody, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		st, err := d.Attach(r.PathValue("uid"), req.Address)
		if err != nil {
			http.Error(w, err.Error(), attachCode(err))
			return
		}
		writeJSON(w, st)
	})
	mux.HandleFunc("DELETE "+ClaimsPath+"{uid}", func(w http.ResponseWriter, r *http.Request) {
		if err := d.Release(r.PathValue("uid")); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET "+ClaimsPath, func(w http.ResponseWriter, r *http.Request) {
		st, err := d.Status()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, st)
	})
	mux.HandleFunc("GET "+SnapshotsPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, d.Snapshots())
	})
	mux.HandleFunc("PUT "+SnapshotsPath+"{address}", func(w http.ResponseWriter, r *http.Request) {
		var snaps []evdev.Capabilities
		if err := decodeBody(w, r, maxState, &snaps); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := d.Seed(r.PathValue("address"), snaps); err != nil {
			http.Error(w, err.Error(), attachCode(err))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// maxAttachBody bounds the body of a claim's PUT, in bytes: it holds one
// address.
const maxAttachBody = 4096

// decodeBody decodes r's body, one JSON value of at most limit bytes with
// no field v does not have, into v. The error says what was wrong: no
// body, a body over limit, a malformed or unknown field, or data after
// the value.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.Is(err, io.EOF):
		return errors.New("body: empty, want a JSON value")
	case errors.As(err, &tooLarge):
		return fmt.Errorf("body: over the %d-byte bound", limit)
	case err != nil:
		return fmt.Errorf("body: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if errors.As(err, &tooLarge) {
			return fmt.Errorf("body: over the %d-byte bound", limit)
		}
		return errors.New("body: data after the JSON value")
	}
	return nil
}

// attachCode maps an Attach error to its HTTP status.
func attachCode(err error) int {
	var bad *badRequest
	switch {
	case errors.As(err, &bad):
		return http.StatusBadRequest
	case errors.Is(err, ErrNoSnapshot), errors.Is(err, errOtherController):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client sees a cut body as an error
}

// DefaultRescan bounds how long a change the daemon missed (a lost
// uevent) goes unseen.
const DefaultRescan = 10 * time.Second

// Run reconciles once, then again on every uevent about a Bluetooth HID
// device or its input devices, and every Config.Rescan, until ctx ends.
// events may be nil (no uevent socket): then only the rescan drives it.
// report gets
// each reconcile's problem (nil when there was none) and may be nil.
func (d *Daemon) Run(ctx context.Context, events *uevent.Listener, report func(error)) {
	tracker := hid.NewTracker()
	var evs <-chan uevent.Event
	if events != nil {
		evs = events.Events()
	}
	every := d.cfg.Rescan
	if every <= 0 {
		every = DefaultRescan
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		err := d.Reconcile()
		if report != nil {
			report(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case ev, ok := <-evs:
			if !ok {
				evs = nil
				continue
			}
			if !tracker.Observe(ev).Relevant {
				continue
			}
		}
	}
}
