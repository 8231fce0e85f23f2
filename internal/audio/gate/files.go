// SPDX-License-Identifier: Apache-2.0

// Package gate gives each prepared audio claim a PipeWire socket of its
// own, through which a client sees and uses only the claim's nodes, and
// records which nodes PipeWire made from the declaration, and which are
// the Bluetooth speakers', by something no client can forge.
//
// Two processes share it through files in PipeWire's runtime directory
// (the pod's hostPath volume, so the files outlive both containers):
//
//   - The operator writes one claim file per prepared claim,
//     claims/<claim UID>.json, naming the node.names the claim holds, and
//     removes it at unprepare (WriteClaim, RemoveClaim). It hands the
//     consumer the directory claims/<claim UID>/, where the socket is.
//   - The pipewire container's first process, which starts PipeWire,
//     runs Run beside it. After every PipeWire start it records the
//     declared nodes' global ids (TrustedFile), then serves each
//     claim file as a security context (a listening socket whose clients
//     carry properties they cannot change) at claims/<claim UID>/pipewire-0,
//     and acts as the permission manager for the clients that connect
//     there: they see the core, the client-node factory (to make their
//     own stream) and the claim's nodes read-only, and nothing else.
//
// What a claim's client cannot do follows from PipeWire's own checks
// (src/pipewire/impl-core.c, impl-link.c, global.c): an object without
// R is not listed and cannot be bound, destroyed or given metadata; a
// node without W cannot take a parameter (volume); a link needs each
// node's owner to see the other end unless whoever makes the link holds
// L on it, and no client holds L (PW_PERM_ALL is RWXM), so WirePlumber
// cannot link a claim's stream to a node the claim does not hold. The
// one object a claim's client can make, its stream, is destroyed when
// its media.class is not a stream's or it carries a declared node's
// name or properties, whether it says so when it appears or later, so
// it cannot pose as a sink.
package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/liken-sh/operators/internal/atomicfile"
	"github.com/liken-sh/operators/internal/pipewire"
)

// Names in the runtime directory.
const (
	// ClaimsDir holds the claim files and each claim's socket directory.
	ClaimsDir = "claims"
	// TrustedFile records the declared nodes of the running PipeWire.
	TrustedFile = "trusted-nodes.json"
	// SocketName is the socket in a claim's directory; it has the name of
	// PipeWire's default socket, so the consumer's PIPEWIRE_REMOTE keeps
	// the path it always had.
	SocketName = pipewire.SocketName
)

// Claim is what a claim file holds.
type Claim struct {
	// UID is the ResourceClaim's UID.
	UID string `json:"uid"`
	// Nodes are the node.names of the nodes the claim holds.
	Nodes []string `json:"nodes"`
	// Streams is how many streams the claim's clients may have at once,
	// all together: the capacity of streams its allocation consumed.
	// Zero (a file written before claims had shares) is DefaultMaxStreams.
	Streams int `json:"streams,omitempty"`
	// Volume is the gain of every stream of the claim's clients, in
	// percent of unity (linear, 0 to 100), apart from the sink's own
	// volume; nil leaves the streams at the gain they set themselves.
	Volume *int `json:"volume,omitempty"`
	// Role is what the claim plays, one of Roles ("" for none): an
	// announcement's running stream ducks the other claims' streams on
	// its sink (duck.go).
	Role string `json:"role,omitempty"`
	// Combine is the claim's combined sink, when it holds more than one
	// output; its node.name (CombinedNodeName) is then one of Nodes.
	Combine *Combine `json:"combine,omitempty"`
	// Passthrough names, by node.name (one of Nodes), the IEC 958 codecs
	// the claim passes through to an HDMI/DP output it holds whole, in
	// PipeWire's names (pipewire.IEC958AC3 ...; PCM, which every such
	// node takes, is not listed). The audio operator keeps each node's
	// codecs to what the prepared claims' files name, so the node passes
	// them through for as long as the file is there.
	Passthrough map[string][]string `json:"passthrough,omitempty"`
}

// check says what is wrong with c's volume and role (nil when nothing).
func (c Claim) check() error {
	if c.Volume != nil && (*c.Volume < 0 || *c.Volume > 100) {
		return fmt.Errorf("claim %s: volume %d%% is outside 0 to 100", c.UID, *c.Volume)
	}
	if _, ok := MediaRole(c.Role); c.Role != "" && !ok {
		return fmt.Errorf("claim %s: role %q is not one of %s", c.UID, c.Role, strings.Join(RoleNames(), ", "))
	}
	for node, codecs := range c.Passthrough {
		if !slices.Contains(c.Nodes, node) {
			return fmt.Errorf("claim %s: passthrough to node %q, which the claim does not hold", c.UID, node)
		}
		if len(codecs) == 0 || slices.Contains(codecs, pipewire.IEC958PCM) {
			return fmt.Errorf("claim %s: passthrough to node %s names no compressed codec (%v)", c.UID, node, codecs)
		}
		if _, err := pipewire.IEC958Literal(codecs); err != nil {
			return fmt.Errorf("claim %s: passthrough to node %s: %w", c.UID, node, err)
		}
	}
	return nil
}

// DefaultMaxStreams is the streams of a claim file that names none: the
// whole of a device's capacity, which such a claim held alone.
const DefaultMaxStreams = 16

// MaxStreams is how many streams c's clients may have.
func (c Claim) MaxStreams() int {
	if c.Streams <= 0 {
		return DefaultMaxStreams
	}
	return c.Streams
}

var uidPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,127}$`)

// SocketDir is the directory a consumer of claim uid gets: its socket
// and nothing else.
func SocketDir(runtimeDir, uid string) string {
	return filepath.Join(runtimeDir, ClaimsDir, uid)
}

// SocketPath is the claim's socket.
func SocketPath(runtimeDir, uid string) string {
	return filepath.Join(SocketDir(runtimeDir, uid), SocketName)
}

func claimPath(runtimeDir, uid string) string {
	return filepath.Join(runtimeDir, ClaimsDir, uid+".json")
}

// WriteClaim writes c's claim file atomically (mode 0644, the directory
// 0755). A UID that could name a path outside the directory, or no
// nodes, is refused.
func WriteClaim(runtimeDir string, c Claim) error {
	if !uidPattern.MatchString(c.UID) {
		return fmt.Errorf("claim UID %q is not a UID", c.UID)
	}
	if len(c.Nodes) == 0 {
		return fmt.Errorf("claim %s names no node", c.UID)
	}
	if c.Streams < 0 {
		return fmt.Errorf("claim %s: %d streams", c.UID, c.Streams)
	}
	if err := c.check(); err != nil {
		return err
	}
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(claimPath(runtimeDir, c.UID), data, 0o644)
}

// RemoveClaim removes claim uid's file; a missing file is no error.
// Run then closes the socket and removes its directory.
func RemoveClaim(runtimeDir, uid string) error {
	if !uidPattern.MatchString(uid) {
		return fmt.Errorf("claim UID %q is not a UID", uid)
	}
	if err := os.Remove(claimPath(runtimeDir, uid)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Claims reads every claim file. A file that cannot be read is named in
// the errors and left out.
func Claims(runtimeDir string) (map[string]Claim, []error) {
	dir := filepath.Join(runtimeDir, ClaimsDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Claim{}, nil
	}
	if err != nil {
		return nil, []error{err}
	}
	out := map[string]Claim{}
	var errs []error
	for _, e := range entries {
		uid, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || !uidPattern.MatchString(uid) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var c Claim
		if err := json.Unmarshal(data, &c); err != nil || c.UID != uid || len(c.Nodes) == 0 || c.Streams < 0 {
			errs = append(errs, fmt.Errorf("claim file %s: not a claim (%v)", e.Name(), err))
			continue
		}
		if err := c.check(); err != nil {
			errs = append(errs, fmt.Errorf("claim file %s: %w", e.Name(), err))
			continue
		}
		out[uid] = c
	}
	return out, errs
}

// Trusted is what TrustedFile holds: the PipeWire instance it is about
// (the daemon's cookie, as pw-dump prints it in the Core object) and,
// for each declared node by node.name, its global id and the
// object.serial it had when it appeared. A node is known by its global
// id: the daemon assigns it and no client can change it, while
// object.serial in a node's properties is its owner's to rewrite (a
// client-node Update replaces it, measured with PipeWire 1.4.2). The
// gate drops a node from the record when its global goes, so an id the
// daemon hands on to a later object is never trusted for it.
//
// Speakers are the Bluetooth speakers' nodes by node.name, each by its
// global id (IsSpeaker says which nodes those are); a speaker's node is
// made anew, under another id, at every codec or profile change, so the
// gate rewrites the record whenever a sink node comes or goes. Serial is
// the highest object.serial among the objects the gate had seen when it
// wrote the record: a node with a serial up to it was judged, and one
// above it may be too new to be in the record yet.
//
// Absent are the declared nodes PipeWire holds none of (its adapter
// could not open the PCM when PipeWire started, or the node went away)
// while the gate asks for them again, by node.name.
type Trusted struct {
	Cookie   uint32            `json:"cookie"`
	Nodes    map[string]uint64 `json:"nodes"`
	IDs      map[string]uint32 `json:"ids"`
	Speakers map[string]uint32 `json:"speakers,omitempty"`
	Serial   uint64            `json:"serial,omitempty"`
	Absent   map[string]Absent `json:"absent,omitempty"`
}

// Trusts reports whether the node with name and global id is the
// declared node of that name in the PipeWire whose cookie is cookie.
func (t Trusted) Trusts(cookie uint32, name string, id uint32) bool {
	want, ok := t.IDs[name]
	return ok && t.Cookie == cookie && cookie != 0 && want == id
}

// TrustsSpeaker reports whether the node with name and global id is a
// Bluetooth speaker's node in the PipeWire whose cookie is cookie.
func (t Trusted) TrustsSpeaker(cookie uint32, name string, id uint32) bool {
	want, ok := t.Speakers[name]
	return ok && t.Cookie == cookie && cookie != 0 && want == id
}

// ReadTrusted reads TrustedFile; a missing file is an empty record.
func ReadTrusted(runtimeDir string) (Trusted, error) {
	data, err := os.ReadFile(filepath.Join(runtimeDir, TrustedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Trusted{}, nil
	}
	if err != nil {
		return Trusted{}, err
	}
	var t Trusted
	if err := json.Unmarshal(data, &t); err != nil {
		return Trusted{}, fmt.Errorf("%s: %w", TrustedFile, err)
	}
	return t, nil
}

func writeTrusted(runtimeDir string, t Trusted) error {
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(runtimeDir, TrustedFile), data, 0o644)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
