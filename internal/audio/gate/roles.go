// SPDX-License-Identifier: Apache-2.0

package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/liken-sh/operators/internal/atomicfile"
)

// A claim's role says what its streams carry. The consumer's streams are
// stamped with the matching media.role (PipeWire's key for it,
// src/pipewire/keys.h, whose documented values include Music, Movie,
// Game, Notification and Communication) through PIPEWIRE_PROPS, which
// libpipewire merges into every pw_stream's properties after the
// application's own (src/pipewire/stream.c, pw_stream_new). What ducks
// is the claim's role as the gate holds it, not the media.role a stream
// says: a stream can set any property of its own, and a tenant must not
// duck the others by calling itself an announcement.
const (
	// RoleAnnouncement ducks every other claim's streams on its sink while
	// one of its streams runs.
	RoleAnnouncement = "announcement"
	// RoleMusic and the rest are ducked by an announcement, as a stream
	// of a claim with no role is.
	RoleMusic         = "music"
	RoleMovie         = "movie"
	RoleGame          = "game"
	RoleNotification  = "notification"
	RoleCommunication = "communication"
)

// mediaRoles maps each role to the media.role its streams carry.
// WirePlumber 0.5's role-based linking knows none of them unless a sink
// lists it in device.intended-roles, which no declared sink does, so the
// stamp changes no link.
var mediaRoles = map[string]string{
	RoleAnnouncement:  "Announcement",
	RoleMusic:         "Music",
	RoleMovie:         "Movie",
	RoleGame:          "Game",
	RoleNotification:  "Notification",
	RoleCommunication: "Communication",
}

// MediaRole returns the media.role of role; ok is false for a role not
// in RoleNames.
func MediaRole(role string) (mediaRole string, ok bool) {
	mediaRole, ok = mediaRoles[role]
	return mediaRole, ok
}

// RoleEnv is the environment that stamps role on every stream a
// consumer makes: PIPEWIRE_PROPS, which libpipewire merges into each
// pw_stream's properties over the application's own
// (src/pipewire/stream.c, pw_stream_new), naming the role's media.role.
// No role (or an unknown one), no variable.
func RoleEnv(role string) []string {
	mr, ok := MediaRole(role)
	if !ok {
		return nil
	}
	return []string{"PIPEWIRE_PROPS={ media.role = " + mr + " }"}
}

// RoleNames are the roles a claim may name, sorted.
func RoleNames() []string {
	return slices.Sorted(maps.Keys(mediaRoles))
}

// DuckingFile is the file in the runtime directory that holds how many
// decibels each sink's other streams are lowered while an announcement
// plays on it, by node.name (the Sink's spec.duckDecibels). The operator
// writes it; the gate reads it whenever an announcement starts, so a
// change holds from the next announcement on.
const DuckingFile = "ducking.json"

// DefaultDuckDecibels is the ducking of a sink the file does not name.
const DefaultDuckDecibels = 20

// MaxDuckDecibels bounds a ducking: 96 dB is below what 16-bit samples
// can carry, silence in effect.
const MaxDuckDecibels = 96

// WriteDucking writes the ducking of each sink (decibels, 0 to
// MaxDuckDecibels, by node.name) when it differs from the file's, and
// reports whether it wrote. A value out of range is refused, naming the
// sink, and nothing is written.
func WriteDucking(runtimeDir string, decibels map[string]int) (bool, error) {
	for name, db := range decibels {
		if db < 0 || db > MaxDuckDecibels {
			return false, fmt.Errorf("ducking of %s: %d dB is outside 0 to %d", name, db, MaxDuckDecibels)
		}
	}
	if old, err := ReadDucking(runtimeDir); err == nil && maps.Equal(old, decibels) {
		return false, nil
	}
	data, err := json.Marshal(decibels)
	if err != nil {
		return false, err
	}
	return true, atomicfile.WriteFile(filepath.Join(runtimeDir, DuckingFile), data, 0o644)
}

// ReadDucking reads DuckingFile; a missing file is an empty map. A file
// that does not decode, or holds a value out of range, is an error
// naming it.
func ReadDucking(runtimeDir string) (map[string]int, error) {
	data, err := os.ReadFile(filepath.Join(runtimeDir, DuckingFile))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]int{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", DuckingFile, err)
	}
	for name, db := range out {
		if db < 0 || db > MaxDuckDecibels {
			return nil, fmt.Errorf("%s: ducking of %s: %d dB is outside 0 to %d", DuckingFile, name, db, MaxDuckDecibels)
		}
	}
	return out, nil
}

// DuckGain is the linear gain of a ducking of db decibels (20 dB is 0.1).
func DuckGain(db int) float64 {
	return math.Pow(10, -float64(db)/20)
}
