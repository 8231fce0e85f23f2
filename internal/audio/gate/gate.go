// SPDX-License-Identifier: Apache-2.0

package gate

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/internal/pipewire/native"
)

// Engine is the pipewire.sec.engine of every claim socket's clients;
// pipewire.sec.app_id carries the claim's UID. The daemon copies a
// security context's properties onto each client that connects through
// it and refuses a client's own change to any pipewire.sec.* key or to
// pipewire.access.
const Engine = "audio.liken.sh"

// AccessPrefix starts the pipewire.access of a claim socket's clients,
// followed by the claim's UID. pipewire.access is one of the three client
// properties the registry announces (src/pipewire/impl-client.c,
// finish_register), so the claim is known from the announcement alone.
// PipeWire's access module leaves a client that arrives with
// pipewire.access set alone, with no permission at all until a manager
// grants some, and WirePlumber's access-default.lua grants nothing for a
// value it does not know ("restricted" would get "rx" on every object),
// so Run is the only manager of these clients.
const AccessPrefix = "audio.liken.sh-claim:"

// Backstop is how often Run reads the claim files even with no file
// event.
const Backstop = 10 * time.Second

// Config is what Run serves.
type Config struct {
	// RuntimeDir is PipeWire's runtime directory.
	RuntimeDir string
	// Socket is the daemon's own socket (RuntimeDir/pipewire-0 when empty).
	Socket string
	// Declared returns the outputs PipeWire was started with (the
	// declaration, withheld ones included); it is read once per PipeWire
	// start. A declared node PipeWire holds none of is made again from
	// its arguments (recreate.go).
	Declared func() []pipewire.Output
	// Logf receives one line per notable step; nil discards.
	Logf func(format string, args ...any)
}

// Run serves every claim file in cfg.RuntimeDir on every PipeWire that
// answers at cfg.Socket, one after another, until ctx ends. After each
// connection it records the declared nodes (TrustedFile) before any claim
// socket exists, so no client of a claim socket can have made a node
// before the record is taken.
func Run(ctx context.Context, cfg Config) {
	if cfg.Socket == "" {
		cfg.Socket = filepath.Join(cfg.RuntimeDir, "pipewire-0")
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := native.Dial(ctx, cfg.Socket, map[string]string{
			"application.name": "audio-operator claim gate",
		})
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 2*time.Second)
			continue
		}
		wait = 100 * time.Millisecond
		s := &session{cfg: cfg, conn: conn, globals: map[uint32]native.Global{},
			clients: map[uint32]string{}, served: map[string]*served{},
			granted: map[uint32][]uint32{}, proxies: map[uint32]uint32{}, watched: map[uint32]uint32{},
			absent: map[string]*Absent{}, creating: map[uint32]string{}, made: map[uint32]string{},
			streams: map[uint32]string{}}
		if err := s.run(ctx); err != nil && ctx.Err() == nil {
			cfg.Logf("claim gate: %v; connecting again", err)
		}
		s.close()
		conn.Close()
	}
}

// served is one claim socket the daemon listens on.
type served struct {
	claim  Claim
	hangUp *os.File // the write end of the pipe whose read end the daemon watches
}

type session struct {
	cfg      Config
	conn     *native.Conn
	globals  map[uint32]native.Global
	trusted  Trusted
	declared map[string]bool // the declared node.names of this PipeWire start
	outputs  map[string]pipewire.Output
	// absent are the declared nodes PipeWire holds none of, by
	// node.name; creating the nodes asked of the adapter factory, by
	// proxy; made the globals the daemon said they became (Bound) whose
	// announcement has not arrived yet (recreate.go).
	absent   map[string]*Absent
	creating map[uint32]string
	made     map[uint32]string
	secCtx   uint32
	factory  uint32              // the client-node factory's id
	clients  map[uint32]string   // claim clients' ids: their claim UID
	granted  map[uint32][]uint32 // the nodes each claim client was granted
	proxies  map[uint32]uint32   // each claim client's proxy, once bound
	watched  map[uint32]uint32   // node proxies of claim clients' streams: their global id
	streams  map[uint32]string   // claim clients' streams by global id: their claim UID
	served   map[string]*served
	duck     duckState            // the streams' gains (duck.go)
	combines map[string]*combiner // combined-sink processes by claim UID (combine.go)
}

func (s *session) run(ctx context.Context) error {
	if err := s.settle(ctx); err != nil {
		return err
	}
	s.trusted = s.recordTrusted()
	s.trusted.Speakers, s.trusted.Serial = s.speakers(), s.newestSerial()
	s.findAbsent(time.Now())
	if err := writeTrusted(s.cfg.RuntimeDir, s.trusted); err != nil {
		return fmt.Errorf("writing %s: %w", TrustedFile, err)
	}
	s.cfg.Logf("claim gate: PipeWire %d: declared nodes %v", s.trusted.Cookie, s.trusted.Nodes)
	var secGlobal *native.Global
	for _, g := range s.globals {
		switch {
		case g.Type == native.TypeSecurityContext:
			secGlobal = &g
		case g.Type == native.TypeFactory && g.Props["factory.name"] == "client-node":
			s.factory = g.ID
		}
	}
	if secGlobal == nil {
		return fmt.Errorf("PipeWire offers no %s", native.TypeSecurityContext)
	}
	id, err := s.conn.Bind(*secGlobal)
	if err != nil {
		return err
	}
	s.secCtx = id

	dir := filepath.Join(s.cfg.RuntimeDir, ClaimsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var fsEvents <-chan fsnotify.Event
	if w, err := fsnotify.NewWatcher(); err == nil {
		defer w.Close()
		if err := w.Add(dir); err == nil {
			fsEvents = w.Events
		}
	}
	s.syncClaims()
	// Clients that were there before this connection (none after a
	// PipeWire start, but the gate may have restarted alone) are managed
	// too: clients before the nodes they made, and nodes before links.
	for _, typ := range []string{native.TypeClient, native.TypeNode, native.TypeLink} {
		for _, g := range s.globals {
			if g.Type == typ {
				s.global(g)
			}
		}
	}
	backstop := time.NewTicker(Backstop)
	defer backstop.Stop()
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		s.armRetry(retry, time.Now())
		select {
		case <-ctx.Done():
			return nil
		case now := <-retry.C:
			s.recreate(now)
		case ev, ok := <-s.conn.Events():
			if !ok {
				return s.conn.Err()
			}
			s.event(ev)
		case _, ok := <-fsEvents:
			if !ok {
				fsEvents = nil
				continue
			}
			s.syncClaims()
		case <-backstop.C:
			s.syncClaims()
		}
	}
}

// settle reads the registry until the daemon has answered a Sync, so
// every object that existed at connect is known.
func (s *session) settle(ctx context.Context) error {
	seq, err := s.conn.Sync()
	if err != nil {
		return err
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout:
			return fmt.Errorf("PipeWire did not answer a sync within 30 s")
		case ev, ok := <-s.conn.Events():
			if !ok {
				return s.conn.Err()
			}
			if ev.Done != nil && *ev.Done == seq {
				return nil
			}
			s.record(ev)
		}
	}
}

func (s *session) record(ev native.Event) {
	switch {
	case ev.Global != nil:
		s.globals[ev.Global.ID] = *ev.Global
	case ev.Removed != nil:
		delete(s.globals, *ev.Removed)
		delete(s.clients, *ev.Removed)
		delete(s.granted, *ev.Removed)
		delete(s.proxies, *ev.Removed)
		delete(s.streams, *ev.Removed)
		for proxy, id := range s.watched {
			if id == *ev.Removed {
				delete(s.watched, proxy)
			}
		}
		s.forget(*ev.Removed)
		s.duckForget(*ev.Removed)
	case ev.Error != nil:
		if _, asked := s.creating[ev.Error.ID]; !asked { // recreated logs those
			s.cfg.Logf("claim gate: %v", ev.Error)
		}
	}
}

// forget drops a declared node that went away from the record, so the
// global id, which the daemon hands to the next object it makes, is never
// trusted for that object. The gate makes the node again (markAbsent).
func (s *session) forget(id uint32) {
	for name, tid := range s.trusted.IDs {
		if tid != id {
			continue
		}
		delete(s.trusted.IDs, name)
		delete(s.trusted.Nodes, name)
		s.cfg.Logf("claim gate: declared node %s (%d) is gone; it is no longer trusted, and is made again", name, id)
		s.markAbsent(name, time.Now())
		s.writeAbsent()
	}
}

// recordTrusted picks, for each declared node.name, the node PipeWire made
// from the declaration. PipeWire creates context.objects while it loads
// its configuration, before its main loop accepts a client, so those
// nodes have lower serials than any object a client made; a node a client
// made with an adapter carries no client.id, so the serial, which the
// daemon assigns, is what tells them apart. Of the nodes with a declared
// name, the one with the lowest serial is the declared one, and only when
// that serial is lower than every client's.
func (s *session) recordTrusted() Trusted {
	t := Trusted{Cookie: s.conn.Cookie(), Nodes: map[string]uint64{}, IDs: map[string]uint32{}}
	declared := map[string]bool{}
	s.outputs = map[string]pipewire.Output{}
	if s.cfg.Declared != nil {
		for _, o := range s.cfg.Declared() {
			if o.Withheld == "" { // PipeWire has no node of that name to trust
				declared[o.Name] = true
				s.outputs[o.Name] = o
			}
		}
	}
	s.declared = declared
	firstClient := uint64(1<<63 - 1)
	for _, g := range s.globals {
		if g.Type == native.TypeClient {
			if v, ok := serial(g); ok && v < firstClient {
				firstClient = v
			}
		}
	}
	for _, g := range s.globals {
		name := g.Props["node.name"]
		if g.Type != native.TypeNode || !declared[name] {
			continue
		}
		v, ok := serial(g)
		if !ok || v >= firstClient {
			continue
		}
		if prev, seen := t.Nodes[name]; !seen || v < prev {
			t.Nodes[name] = v
			t.IDs[name] = g.ID
		}
	}
	return t
}

func serial(g native.Global) (uint64, bool) {
	v, err := strconv.ParseUint(g.Props["object.serial"], 10, 64)
	return v, err == nil
}

// trustedID returns the global id of the declared node named name.
func (s *session) trustedID(name string) (uint32, bool) {
	id, ok := s.trusted.IDs[name]
	if _, there := s.globals[id]; !ok || !there {
		return 0, false
	}
	return id, true
}

func (s *session) event(ev native.Event) {
	var gone *native.Global
	if ev.Removed != nil {
		if g, ok := s.globals[*ev.Removed]; ok {
			gone = &g
		}
	}
	s.record(ev)
	s.recreated(ev)
	// A sink node (or a device) that comes or goes may be a speaker's:
	// the record says so before the operator's next pass judges it.
	if sink := func(g *native.Global) bool {
		return g != nil && (g.Type == typeDevice || g.Type == native.TypeNode && g.Props["media.class"] == "Audio/Sink")
	}; sink(ev.Global) || sink(gone) {
		s.recordSpeakers()
	}
	switch {
	case ev.Global != nil:
		s.global(*ev.Global)
	case ev.NodeInfo != nil:
		id, ok := s.watched[ev.NodeInfo.Proxy]
		if !ok || id != ev.NodeInfo.ID {
			return
		}
		if ev.NodeInfo.Props == nil { // its state alone changed
			s.duckInfo(ev.NodeInfo)
			return
		}
		if why := s.misfit(ev.NodeInfo.Props); why != "" {
			s.cfg.Logf("claim gate: node %d of a client of a claim changed its properties: %s: destroyed", id, why)
			_ = s.conn.Destroy(id)
			return
		}
		if uid, ok := s.streams[id]; ok && capturesSink(ev.NodeInfo.Props) {
			g := s.globals[id]
			g.Props = ev.NodeInfo.Props
			s.refuse(g, uid, RefusedMonitor)
			return
		}
		s.duckInfo(ev.NodeInfo)
	}
}

// misfit says why a claim client's node with props is not a plain
// stream ("" when it is one): a media.class that is not a stream's, a
// declared node's node.name, or liken.audio.* properties.
func (s *session) misfit(props map[string]string) string {
	if class := props["media.class"]; !strings.HasPrefix(class, "Stream/") {
		return fmt.Sprintf("media.class %q is not a stream's", class)
	}
	if name := props["node.name"]; s.declared[name] {
		return fmt.Sprintf("node.name %q is a declared node's", name)
	}
	for k := range props {
		if strings.HasPrefix(k, DeclarationPropPrefix) {
			return fmt.Sprintf("it carries %s", k)
		}
	}
	return ""
}

// DeclarationPropPrefix starts the properties the declaration sets on
// its nodes (liken.audio.card, liken.audio.pcm, ...).
const DeclarationPropPrefix = "liken.audio."

// global manages one object: a claim client gets its permissions, and a
// node a claim client made is destroyed unless it is a plain stream that
// records no sink and fits the claim's share (claimStream); a link from
// a sink into a claim's stream ends that stream (link). A
// stream's node is watched from then on: its owner can change every
// property of it but object.id and client.id at any time (a client-node
// Update, measured with PipeWire 1.4.2), so a stream that later calls
// itself a sink, or takes a declared node's name, is destroyed then.
func (s *session) global(g native.Global) {
	switch g.Type {
	case native.TypeClient:
		uid, ok := strings.CutPrefix(g.Props["pipewire.access"], AccessPrefix)
		if !ok {
			return
		}
		sv := s.served[uid]
		if sv == nil {
			s.cfg.Logf("claim gate: client %d of claim %s, which is not prepared: disconnected", g.ID, uid)
			_ = s.conn.Destroy(g.ID)
			return
		}
		s.clients[g.ID] = uid
		s.grant(g, sv.claim)
	case native.TypeNode:
		owner, err := strconv.ParseUint(g.Props["client.id"], 10, 32)
		if err != nil {
			return
		}
		uid, ok := s.clients[uint32(owner)]
		if !ok {
			s.regrant(g)
			return
		}
		if why := s.misfit(g.Props); why != "" {
			s.cfg.Logf("claim gate: node %d (%q) of a client of claim %s is not a plain stream: %s: destroyed", g.ID, g.Props["node.name"], uid, why)
			_ = s.conn.Destroy(g.ID)
			return
		}
		if !s.claimStream(g, uid) {
			return
		}
		proxy, err := s.conn.BindNode(g)
		if err != nil {
			s.cfg.Logf("claim gate: watching node %d of claim %s: %v; destroyed", g.ID, uid, err)
			_ = s.conn.Destroy(g.ID)
			return
		}
		s.watched[proxy] = g.ID
		s.duckStream(proxy, g)
	case native.TypeLink:
		s.link(g)
		s.duckLink(g)
	}
}

// typeDevice is the registry type of a device (a Bluetooth speaker's
// bluez5 device, an ALSA card's).
const typeDevice = "PipeWire:Interface:Device"

// isSpeaker reports whether node g is a Bluetooth speaker's: an
// Audio/Sink whose device.id names a bluez5 device made by the same
// client as the node, neither of them by a client of a claim socket. The
// daemon sets a client-node's client.id itself and keeps its owner from
// changing it (measured with PipeWire 1.4.2), and a client-device's
// likewise, so a node another client made and named like a speaker's,
// device.id and all, is not one. WirePlumber's bluez5 monitor makes both
// the device and its nodes (the same client.id). A claim socket's client
// sees no factory that makes a device, and global destroys any node it
// makes that is not a stream.
func (s *session) isSpeaker(g native.Global) bool {
	if g.Type != native.TypeNode || g.Props["media.class"] != "Audio/Sink" || g.Props["node.name"] == "" || s.ownedByClaim(g) {
		return false
	}
	dev, err := strconv.ParseUint(g.Props["device.id"], 10, 32)
	if err != nil {
		return false
	}
	d, ok := s.globals[uint32(dev)]
	return ok && d.Type == typeDevice && d.Props["device.api"] == "bluez5" && !s.ownedByClaim(d) &&
		d.Props["client.id"] == g.Props["client.id"]
}

// speakers returns the speakers' nodes by node.name (isSpeaker), the
// lowest global id of several with one name.
func (s *session) speakers() map[string]uint32 {
	out := map[string]uint32{}
	for _, g := range s.globals {
		if !s.isSpeaker(g) {
			continue
		}
		name := g.Props["node.name"]
		if prev, ok := out[name]; !ok || g.ID < prev {
			out[name] = g.ID
		}
	}
	return out
}

// speakerID returns the global id of the Bluetooth speaker node named
// name, looked up at each grant since a speaker's node is made anew
// (another id) whenever its codec or profile changes.
func (s *session) speakerID(name string) (uint32, bool) {
	id, ok := s.speakers()[name]
	return id, ok
}

// recordSpeakers writes the record again with the speakers' nodes of now
// and the newest serial seen.
func (s *session) recordSpeakers() {
	s.trusted.Speakers = s.speakers()
	s.trusted.Serial = s.newestSerial()
	if err := writeTrusted(s.cfg.RuntimeDir, s.trusted); err != nil {
		s.cfg.Logf("claim gate: writing %s: %v", TrustedFile, err)
	}
}

// newestSerial is the highest object.serial among the globals.
func (s *session) newestSerial() uint64 {
	var top uint64
	for _, g := range s.globals {
		if v, ok := serial(g); ok && v > top {
			top = v
		}
	}
	return top
}

// ownedByClaim reports whether a claim socket's client made g.
func (s *session) ownedByClaim(g native.Global) bool {
	owner, err := strconv.ParseUint(g.Props["client.id"], 10, 32)
	if err != nil {
		return false
	}
	_, ok := s.clients[uint32(owner)]
	return ok
}

// regrant gives the clients of every claim that names node g (a speaker's
// node made again under a new id) their permissions again.
func (s *session) regrant(g native.Global) {
	name := g.Props["node.name"]
	if name == "" {
		return
	}
	for id, uid := range s.clients {
		sv := s.served[uid]
		if sv == nil || !slices.Contains(sv.claim.Nodes, name) {
			continue
		}
		if c, ok := s.globals[id]; ok {
			s.grant(c, sv.claim)
		}
	}
}

// grant sets a claim client's permissions: nothing by default, the core
// to speak to, the client-node factory to make its stream with, and the
// claim's declared nodes to be seen (and so linked to) but not changed
// or destroyed.
func (s *session) grant(client native.Global, c Claim) {
	perms := []native.Permission{
		{ID: native.AnyID, Bits: 0},
		{ID: 0, Bits: native.PermR | native.PermX},
	}
	if s.factory != 0 {
		perms = append(perms, native.Permission{ID: s.factory, Bits: native.PermR})
	}
	var granted []string
	var ids []uint32
	for _, name := range c.Nodes {
		id, ok := s.trustedID(name)
		if !ok {
			id, ok = s.speakerID(name)
		}
		if !ok {
			id, ok = s.combinedID(name)
		}
		if ok {
			perms = append(perms, native.Permission{ID: id, Bits: native.PermR})
			granted = append(granted, fmt.Sprintf("%s (%d)", name, id))
			ids = append(ids, id)
		}
	}
	for _, old := range s.granted[client.ID] {
		if !slices.Contains(ids, old) {
			perms = append(perms, native.Permission{ID: old, Bits: 0})
		}
	}
	proxy, bound := s.proxies[client.ID]
	var err error
	if !bound {
		proxy, err = s.conn.Bind(client)
	}
	if err == nil {
		s.proxies[client.ID] = proxy
		err = s.conn.UpdatePermissions(proxy, perms)
	}
	if err != nil {
		s.cfg.Logf("claim gate: permissions of client %d (claim %s): %v", client.ID, c.UID, err)
		return
	}
	s.granted[client.ID] = ids
	s.cfg.Logf("claim gate: client %d of claim %s sees %v", client.ID, c.UID, granted)
}

// syncClaims serves every claim file that is not served and closes every
// socket whose file is gone.
func (s *session) syncClaims() {
	claims, errs := Claims(s.cfg.RuntimeDir)
	for _, err := range errs {
		s.cfg.Logf("claim gate: %v", err)
	}
	if claims == nil {
		return
	}
	for _, uid := range sortedKeys(s.served) {
		if _, ok := claims[uid]; ok {
			continue
		}
		s.stop(uid)
		for id, owner := range s.clients {
			if owner == uid {
				_ = s.conn.Destroy(id)
			}
		}
		if err := os.RemoveAll(SocketDir(s.cfg.RuntimeDir, uid)); err != nil {
			s.cfg.Logf("claim gate: %v", err)
		}
		s.cfg.Logf("claim gate: claim %s unprepared: its socket is closed", uid)
	}
	for _, uid := range sortedKeys(claims) {
		if sv, ok := s.served[uid]; ok {
			renamed := !slices.Equal(sv.claim.Nodes, claims[uid].Nodes)
			// A new share of streams holds for the next stream made.
			sv.claim = claims[uid]
			if renamed {
				// The claim's nodes were named anew (an endpoint's node
				// renamed): its clients' permissions follow.
				for id, owner := range s.clients {
					if g, ok := s.globals[id]; ok && owner == uid {
						s.grant(g, sv.claim)
					}
				}
			}
			continue
		}
		if err := s.serve(claims[uid]); err != nil {
			s.cfg.Logf("claim gate: serving claim %s: %v", uid, err)
		}
	}
	s.balance() // a claim's volume or role may have changed
	s.syncCombines()
}

// serve creates claim c's socket and hands it to the daemon as a
// security context. The socket file is bound anew at every PipeWire
// start: the old one's listener died with the old daemon.
func (s *session) serve(c Claim) error {
	dir := SocketDir(s.cfg.RuntimeDir, c.UID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, SocketName)
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return err
	}
	// The daemon gets its own copy of the listening socket; closing ours
	// must leave the file in place.
	l.SetUnlinkOnClose(false)
	defer l.Close()
	if err := os.Chmod(path, 0o666); err != nil {
		return err
	}
	lf, err := l.File()
	if err != nil {
		return err
	}
	defer lf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	err = s.conn.CreateSecurityContext(s.secCtx, lf, r, map[string]string{
		"pipewire.sec.engine": Engine,
		"pipewire.sec.app_id": c.UID,
		"pipewire.access":     AccessPrefix + c.UID,
	})
	if err != nil {
		w.Close()
		return err
	}
	s.served[c.UID] = &served{claim: c, hangUp: w}
	s.cfg.Logf("claim gate: claim %s served at %s for %v", c.UID, path, c.Nodes)
	return nil
}

func (s *session) stop(uid string) {
	if sv := s.served[uid]; sv != nil {
		sv.hangUp.Close()
		delete(s.served, uid)
	}
}

func (s *session) close() {
	s.stopCombines()
	for uid := range s.served {
		s.stop(uid)
	}
}
