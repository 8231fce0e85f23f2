// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// CheckpointFile is the name of the checkpoint in the plugin data directory.
const CheckpointFile = "checkpoint.json"

// checkpointVersion names the file format. A reader accepts only versions
// it knows; unknown fields inside a known version are ignored, so a newer
// driver may add fields that an older one rolled back to still reads.
const checkpointVersion = "liken.sh/dra-checkpoint/v1"

// claimPhase is the two-phase state of one claim: a claim whose prepare
// started but never completed is visible after a crash, so the next prepare
// redoes it and an unprepare still finds what to undo.
type claimPhase string

const (
	phaseStarted   claimPhase = "PrepareStarted"
	phaseCompleted claimPhase = "PrepareCompleted"
)

// preparedDevice is one allocated device of a prepared claim, with
// everything needed to answer the kubelet and rebuild the CDI spec without
// asking the operator again.
type preparedDevice struct {
	Requests    []string       `json:"requests"`
	Pool        string         `json:"pool"`
	Device      string         `json:"device"`
	ShareID     *types.UID     `json:"shareID,omitempty"`
	AdminAccess bool           `json:"adminAccess,omitempty"`
	CDIName     string         `json:"cdiName"`
	Edits       ContainerEdits `json:"edits"`
}

// claimRecord is one claim in the checkpoint.
type claimRecord struct {
	Namespace string           `json:"namespace"`
	Name      string           `json:"name"`
	Phase     claimPhase       `json:"phase"`
	Updated   time.Time        `json:"updated"`
	Devices   []preparedDevice `json:"devices,omitempty"`
}

// checkpointBody is the part the checksum covers.
type checkpointBody struct {
	BootID string                     `json:"bootID,omitempty"`
	Claims map[types.UID]*claimRecord `json:"claims"`
}

// checkpointEnvelope is the file. The checksum covers the body's bytes as
// stored (compacted), not a re-encoding of the fields this version knows,
// so a body with fields added by a newer driver still verifies.
type checkpointEnvelope struct {
	Version  string          `json:"version"`
	Checksum string          `json:"checksum"`
	Body     json.RawMessage `json:"body"`
}

// checkpoint is the prepared-claim state kept in one file, written
// atomically (temporary file, fsync, rename, directory fsync).
type checkpoint struct {
	path string
	body checkpointBody
	seen fileStamp // the file as last read or written by this process
}

// fileStamp identifies one version of the file: a rename gives a new inode.
type fileStamp struct {
	ino  uint64
	size int64
	mod  int64
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	st := fileStamp{size: fi.Size(), mod: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st
}

// refresh re-reads the file when another process replaced it since this
// one last read or wrote it.
func (c *checkpoint) refresh() error {
	if stampOf(c.path) == c.seen {
		return nil
	}
	fresh, err := loadCheckpoint(c.path)
	if err != nil {
		return err
	}
	c.body, c.seen = fresh.body, fresh.seen
	return nil
}

// errCorruptCheckpoint marks a checkpoint that exists but cannot be trusted.
var errCorruptCheckpoint = errors.New("corrupt checkpoint")

// loadCheckpoint reads the file at path; a missing file is an empty state.
func loadCheckpoint(path string) (*checkpoint, error) {
	cp := &checkpoint{path: path, body: checkpointBody{Claims: map[types.UID]*claimRecord{}}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cp, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	var env checkpointEnvelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("%w %s: %v", errCorruptCheckpoint, path, err)
	}
	if env.Version != checkpointVersion {
		return nil, fmt.Errorf("%w %s: version %q, this driver reads %q", errCorruptCheckpoint, path, env.Version, checkpointVersion)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, env.Body); err != nil {
		return nil, fmt.Errorf("%w %s: body: %v", errCorruptCheckpoint, path, err)
	}
	if sum := checksum(compact.Bytes()); sum != env.Checksum {
		return nil, fmt.Errorf("%w %s: checksum %s does not match content (%s)", errCorruptCheckpoint, path, env.Checksum, sum)
	}
	var body checkpointBody
	if err := json.Unmarshal(compact.Bytes(), &body); err != nil {
		return nil, fmt.Errorf("%w %s: body: %v", errCorruptCheckpoint, path, err)
	}
	if body.Claims == nil {
		body.Claims = map[types.UID]*claimRecord{}
	}
	for uid, rec := range body.Claims {
		if rec == nil {
			delete(body.Claims, uid)
		}
	}
	cp.body = body
	cp.seen = stampOf(path)
	return cp, nil
}

// quarantine moves an untrusted checkpoint aside, never deleting it, so a
// person can read what it held. It returns the new path.
func quarantine(path string) (string, error) {
	dst := fmt.Sprintf("%s.corrupt-%s", path, time.Now().UTC().Format("20060102T150405.000000000"))
	if err := os.Rename(path, dst); err != nil {
		return "", fmt.Errorf("move corrupt checkpoint aside: %w", err)
	}
	return dst, nil
}

func checksum(compactBody []byte) string {
	sum := sha256.Sum256(compactBody)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// save writes the whole state atomically.
func (c *checkpoint) save() error {
	body, err := json.Marshal(c.body)
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	data, err := json.MarshalIndent(checkpointEnvelope{Version: checkpointVersion, Checksum: checksum(body), Body: body}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	dir := filepath.Dir(c.path)
	tmp, err := os.CreateTemp(dir, filepath.Base(c.tempPattern()))
	if err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write checkpoint %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync checkpoint %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write checkpoint %s: %w", tmp.Name(), err)
	}
	reached(stepCheckpointTempSynced)
	if err := os.Rename(tmp.Name(), c.path); err != nil {
		return fmt.Errorf("replace checkpoint %s: %w", c.path, err)
	}
	reached(stepCheckpointRenamed)
	c.seen = stampOf(c.path)
	return syncPath(dir)
}

// tempPattern matches the temporary files save writes before its rename.
func (c *checkpoint) tempPattern() string {
	return filepath.Join(filepath.Dir(c.path), "."+filepath.Base(c.path)+".*")
}

// removeStaleTemps deletes temporary files a save left when its process
// died between writing and renaming (they would pile up, one per crash).
// The caller holds the state lock, so no save of another process is under
// way. Failures are only logged.
func (c *checkpoint) removeStaleTemps(logger klog.Logger) {
	stale, _ := filepath.Glob(c.tempPattern())
	for _, p := range stale {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			logger.Error(err, "Removing a checkpoint's stale temporary file", "path", p)
			continue
		}
		logger.Info("Removed a checkpoint's temporary file left by a process that died while saving", "path", p)
	}
}

// update applies change to a copy of the state and saves it; the in-memory
// state changes only when the file did, so a failed write leaves both as
// they were.
func (c *checkpoint) update(change func(claims map[types.UID]*claimRecord)) error {
	next := checkpointBody{BootID: c.body.BootID, Claims: make(map[types.UID]*claimRecord, len(c.body.Claims)+1)}
	for uid, rec := range c.body.Claims {
		next.Claims[uid] = rec
	}
	change(next.Claims)
	old := c.body
	c.body = next
	if err := c.save(); err != nil {
		c.body = old
		return err
	}
	return nil
}

// readBootID returns the kernel's boot ID, or "" when it cannot be read
// (the file is Linux-only; its absence only disables reboot detection).
func readBootID(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
