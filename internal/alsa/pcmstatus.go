// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ProcAsoundRoot is where the kernel lists its sound cards' state.
const ProcAsoundRoot = "/proc/asound"

// Substream is one PCM substream's state as the kernel prints it in
// /proc/asound/card<C>/pcm<D><p|c>/sub<N>/status
// (sound/core/pcm.c, snd_pcm_substream_proc_status_read): "closed" when
// no one has it open, else its state and the pid of the process that
// opened it.
type Substream struct {
	Card, Device, Sub int
	Stream            Stream
	// Open is true while a process holds the substream.
	Open bool
	// State is the PCM state (OPEN, SETUP, PREPARED, RUNNING, XRUN,
	// DRAINING, PAUSED, SUSPENDED, DISCONNECTED), "" when closed.
	State string
	// OwnerPID is the holder's pid as the reader's PID namespace sees it
	// (the kernel prints pid_vnr), 0 when it is not visible there or the
	// substream is closed.
	OwnerPID int
}

// maxStatus bounds what ParseSubstreamStatus reads; the kernel's file
// is a few hundred bytes.
const maxStatus = 4096

// ParseSubstreamStatus reads a substream status file's text into s's
// Open, State and OwnerPID. A text that is neither "closed" nor has a
// "state:" line is an error quoting its start.
func ParseSubstreamStatus(data []byte) (Substream, error) {
	var s Substream
	if len(data) > maxStatus {
		return s, fmt.Errorf("substream status of %d bytes, more than %d", len(data), maxStatus)
	}
	text := bytes.TrimSpace(data)
	if string(text) == "closed" {
		return s, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch key {
		case "state":
			if value == "" || strings.ContainsFunc(value, func(r rune) bool { return r < 'A' || r > 'Z' }) {
				return Substream{}, fmt.Errorf("substream state %q is not a PCM state's name", value)
			}
			s.Open, s.State = true, value
		case "owner_pid":
			pid, err := strconv.Atoi(value)
			if err != nil || pid < 0 {
				return Substream{}, fmt.Errorf("owner_pid %q is not a pid", value)
			}
			s.OwnerPID = pid
		}
	}
	if !s.Open {
		return Substream{}, fmt.Errorf("substream status %q is neither closed nor has a state", clip(text))
	}
	return s, nil
}

func clip(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}

// ReadSubstreams reads the status of every substream of card's PCMs
// under root (ProcAsoundRoot when empty), ordered by device, stream and
// substream; device < 0 reads every PCM of the card, else only that one.
// A card with no directory there has none (a container's /proc/asound
// is masked); a file that cannot be parsed is an error naming it.
func ReadSubstreams(root string, card, device int) ([]Substream, error) {
	if root == "" {
		root = ProcAsoundRoot
	}
	pattern := filepath.Join(root, "card"+strconv.Itoa(card), "pcm*", "sub*", "status")
	paths, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var out []Substream
	for _, path := range paths {
		sub := filepath.Base(filepath.Dir(path))
		pcm := filepath.Base(filepath.Dir(filepath.Dir(path)))
		var s Substream
		var dir byte
		if _, err := fmt.Sscanf(pcm, "pcm%d%c", &s.Device, &dir); err != nil || (dir != 'p' && dir != 'c') {
			continue
		}
		if _, err := fmt.Sscanf(sub, "sub%d", &s.Sub); err != nil || device >= 0 && s.Device != device {
			continue
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		st, err := ParseSubstreamStatus(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		st.Card, st.Device, st.Sub, st.Stream = card, s.Device, s.Sub, Playback
		if dir == 'c' {
			st.Stream = Capture
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b Substream) int {
		if a.Device != b.Device {
			return a.Device - b.Device
		}
		if a.Stream != b.Stream {
			return int(a.Stream) - int(b.Stream)
		}
		return a.Sub - b.Sub
	})
	return out, nil
}
