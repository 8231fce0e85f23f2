// SPDX-License-Identifier: Apache-2.0

package native

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sort"
	"sync"

	"golang.org/x/sys/unix"
)

// Object ids and opcodes (src/pipewire/core.h, client.h,
// extensions/security-context.h of PipeWire 1.4).
const (
	idCore     = 0
	idClient   = 1
	idRegistry = 2

	coreHello        = 1
	coreSync         = 2
	corePong         = 3
	coreGetRegistry  = 5
	coreCreateObject = 6

	coreEventInfo     = 0
	coreEventDone     = 1
	coreEventPing     = 2
	coreEventError    = 3
	coreEventRemoveID = 4
	coreEventBoundID  = 5
	// coreEventBoundProps replaces bound_id for a core of version 4
	// (src/pipewire/resource.c, pw_resource_set_bound_id); its first two
	// members are bound_id's.
	coreEventBoundProps = 8

	clientError             = 1
	clientUpdateProperties  = 2
	clientUpdatePermissions = 4

	registryEventGlobal       = 0
	registryEventGlobalRemove = 1
	registryBind              = 1
	registryDestroy           = 2

	securityContextCreate = 1

	nodeEventInfo = 0
	// nodeSetParam is PW_NODE_METHOD_SET_PARAM (src/pipewire/node.h).
	nodeSetParam = 3
	// nodeChangeState and nodeChangeProps are PW_NODE_CHANGE_MASK_STATE
	// and PW_NODE_CHANGE_MASK_PROPS (src/pipewire/node.h).
	nodeChangeState = 1 << 2
	nodeChangeProps = 1 << 3

	clientNodeUpdate = 2
	// clientNodeUpdateInfo is PW_CLIENT_NODE_UPDATE_INFO, and
	// spaNodeChangeProps SPA_NODE_CHANGE_MASK_PROPS.
	clientNodeUpdateInfo = 1 << 1
	spaNodeChangeProps   = 1 << 1

	versionCore       = 4
	versionNode       = 3
	versionRegistry   = 3
	versionClientNode = 6

	headerSize = 16
	// maxMessage bounds one message from the daemon; the size field has
	// 24 bits.
	maxMessage = 1 << 24
)

// Interface types as the registry names them.
const (
	TypeClient          = "PipeWire:Interface:Client"
	TypeNode            = "PipeWire:Interface:Node"
	TypeLink            = "PipeWire:Interface:Link"
	TypeFactory         = "PipeWire:Interface:Factory"
	TypeSecurityContext = "PipeWire:Interface:SecurityContext"
	TypeClientNode      = "PipeWire:Interface:ClientNode"
)

// Permission bits (src/pipewire/permission.h).
const (
	PermR = 0o400 // the object is seen and its events arrive
	PermW = 0o200 // methods that change it may be called
	PermX = 0o100 // methods may be called
	PermM = 0o010 // metadata may be set on it
	PermL = 0o020 // it may be linked to a node its owner cannot see
)

// AnyID is the object id that stands for every object without a
// permission of its own (PW_ID_ANY).
const AnyID = 0xffffffff

// Permission is one entry of a client's permission table.
type Permission struct {
	ID, Bits uint32
}

// Global is one object the registry announced.
type Global struct {
	ID          uint32
	Permissions uint32
	Type        string
	Version     uint32
	Props       map[string]string
}

// Event is one thing the daemon said that the caller acts on: exactly
// one of its fields is set.
type Event struct {
	// Global is an object that appeared (or was already there).
	Global *Global
	// Removed is the id of an object that went away.
	Removed *uint32
	// Done is the sequence number of a Sync that completed.
	Done *uint32
	// Error is an error the daemon reported.
	Error *Error
	// NodeInfo is the info of a node bound with BindNode: sent once at
	// bind and again whenever the node's properties change.
	NodeInfo *NodeInfo
	// Bound says which global an object this client made (CreateObject)
	// became.
	Bound *Bound
}

// Bound is the daemon's bound_id (or bound_props) event: the proxy a
// CreateObject returned is the global with id Global. Only the daemon
// sends it, to the client whose proxy it is.
type Bound struct {
	Proxy, Global uint32
}

// NodeState is a node's state as its info event carries it (enum
// pw_node_state, src/pipewire/node.h).
type NodeState int32

// The node states.
const (
	NodeError     NodeState = -1
	NodeCreating  NodeState = 0
	NodeSuspended NodeState = 1
	NodeIdle      NodeState = 2
	// NodeRunning: the node is started and processes samples each cycle
	// of its driver.
	NodeRunning NodeState = 3
)

// NodeInfo is what a Node's info event says that the caller acts on. It
// arrives at bind and whenever the node's properties or state change.
type NodeInfo struct {
	// Proxy is the id BindNode returned.
	Proxy uint32
	// ID is the node's global id.
	ID uint32
	// Props are the node's properties as they are now, nil when the
	// event is about the state alone. Its owner may change them at any
	// time (a client-node's Update), object.serial included; only
	// object.id and client.id are kept by the daemon
	// (src/pipewire/impl-node.c, update_properties), measured with
	// PipeWire 1.4.2.
	Props map[string]string
	// State is the node's state now.
	State NodeState
}

// Error is an error event: the object it is about, the sequence number
// of the call it answers, a negative errno and the daemon's message.
type Error struct {
	ID, Seq uint32
	Res     int32
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("PipeWire error on object %d (seq %d): %s (%v)", e.ID, e.Seq, e.Message, unix.Errno(-e.Res))
}

// Conn is one connection to a PipeWire daemon. Events are read on a
// goroutine of its own, which answers the daemon's pings; the caller
// reads them from Events.
type Conn struct {
	c      *net.UnixConn
	events chan Event
	done   chan struct{}

	mu     sync.Mutex
	seq    uint32
	next   uint32   // the next new proxy id past every one used
	free   []uint32 // proxy ids the daemon released, sorted
	err    error
	cookie uint32
	nodes  map[uint32]bool // proxies bound with BindNode
}

// Dial connects to the socket at path, introduces itself with props
// (application.name and the like) and asks for the registry, whose
// Global events then arrive for every object the client may see. It
// fails when the socket does not accept the connection.
func Dial(ctx context.Context, path string, props map[string]string) (*Conn, error) {
	return dial(ctx, path, props, true)
}

// DialCore connects as Dial does without asking for the registry: no
// Global or Removed event arrives, so a client that only needs the core
// (Roundtrip) costs the daemon no announcement of its objects. The
// daemon still registers the client itself as a global, which every
// other client with the registry sees come and go.
func DialCore(ctx context.Context, path string, props map[string]string) (*Conn, error) {
	return dial(ctx, path, props, false)
}

func dial(ctx context.Context, path string, props map[string]string, registry bool) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	c := &Conn{c: nc.(*net.UnixConn), events: make(chan Event, 256), done: make(chan struct{}), next: idRegistry + 1,
		nodes: map[uint32]bool{}}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	steps := []func() error{
		func() error { return c.send(idCore, coreHello, nil, func(w *builder) { w.int32(versionCore) }) },
		func() error {
			return c.send(idClient, clientUpdateProperties, nil, func(w *builder) { w.dict(keys, props) })
		},
	}
	if registry {
		steps = append(steps, func() error {
			return c.send(idCore, coreGetRegistry, nil, func(w *builder) { w.int32(versionRegistry); w.int32(idRegistry) })
		})
	}
	for _, s := range steps {
		if err := s(); err != nil {
			nc.Close()
			return nil, err
		}
	}
	go c.read()
	return c, nil
}

// Events delivers what the daemon says, in order; it is closed when the
// connection ends (Err then says why).
func (c *Conn) Events() <-chan Event { return c.events }

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended, or nil while it is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Cookie is the daemon's cookie from its Core info event (a random
// number drawn at its start), 0 until that event has arrived.
func (c *Conn) Cookie() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cookie
}

// Close ends the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Sync asks the daemon to answer with Done once it has handled every
// earlier message, and returns the sequence number Done will carry.
func (c *Conn) Sync() (uint32, error) {
	c.mu.Lock()
	seq := c.seq + 1
	c.mu.Unlock()
	err := c.send(idCore, coreSync, nil, func(w *builder) { w.int32(idCore); w.uint32(seq) })
	return seq, err
}

// Roundtrip calls Sync and waits for its Done: nil once the daemon has
// handled every earlier message of this connection. It fails with the
// daemon's error event, when the connection ends, or when ctx ends
// first. It reads Events itself and drops every other event, so it is
// for a caller that reads no event of its own.
func (c *Conn) Roundtrip(ctx context.Context) error {
	seq, err := c.Sync()
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("PipeWire did not answer a sync: %w", ctx.Err())
		case ev, ok := <-c.events:
			switch {
			case !ok:
				if err := c.Err(); err != nil {
					return err
				}
				return errors.New("PipeWire closed the connection")
			case ev.Error != nil:
				return ev.Error
			case ev.Done != nil && *ev.Done == seq:
				return nil
			}
		}
	}
}

// Bind binds global g and returns the new proxy's id.
func (c *Conn) Bind(g Global) (uint32, error) {
	id := c.newID()
	err := c.send(idRegistry, registryBind, nil, func(w *builder) {
		w.uint32(g.ID)
		w.string(g.Type)
		w.uint32(g.Version)
		w.uint32(id)
	})
	return id, err
}

// BindNode binds node global g and returns the new proxy's id; the
// node's info then arrives as NodeInfo events, now and at every change.
func (c *Conn) BindNode(g Global) (uint32, error) {
	id, err := c.Bind(g)
	if err == nil {
		c.mu.Lock()
		c.nodes[id] = true
		c.mu.Unlock()
	}
	return id, err
}

// CreateClientNode makes a node this client implements (the client-node
// factory, src/modules/module-client-node) with props, and returns its
// proxy. The node has no ports; it exists to be seen in the graph. The
// daemon registers it once this client answers its ping, which Conn
// does by itself.
func (c *Conn) CreateClientNode(props map[string]string) (uint32, error) {
	id := c.newID()
	err := c.send(idCore, coreCreateObject, nil, func(w *builder) {
		w.string("client-node")
		w.string(TypeClientNode)
		w.uint32(versionClientNode)
		w.dict(sortedKeys(props), props)
		w.uint32(id)
	})
	return id, err
}

// CreateNode asks factory (a factory's factory.name, such as "adapter")
// to make a node with props, owned by this client, and returns its proxy
// id: a Bound event with that proxy names the node's global once it is
// registered, and an Error event whose ID is the proxy (Res a negative
// errno) says the factory refused. The node is destroyed with this
// connection unless props set object.linger.
func (c *Conn) CreateNode(factory string, props map[string]string) (uint32, error) {
	id := c.newID()
	err := c.send(idCore, coreCreateObject, nil, func(w *builder) {
		w.string(factory)
		w.string(TypeNode)
		w.uint32(versionNode)
		w.dict(sortedKeys(props), props)
		w.uint32(id)
	})
	return id, err
}

// UpdateClientNode changes the properties of the node made with
// CreateClientNode as proxy: the daemon merges props into the node's own
// (client_node_demarshal_update in module-client-node/protocol-native.c:
// the change mask and a parameter count, then the node info as a Struct
// whose properties are inline, an item count and then each key and
// value).
func (c *Conn) UpdateClientNode(proxy uint32, props map[string]string) error {
	keys := sortedKeys(props)
	return c.send(proxy, clientNodeUpdate, nil, func(w *builder) {
		w.int32(clientNodeUpdateInfo)
		w.int32(0)
		w.structure(func() {
			w.int32(0)
			w.int32(0)
			w.int64(spaNodeChangeProps)
			w.int64(0)
			w.int32(int32(len(keys)))
			for _, k := range keys {
				w.string(k)
				w.string(props[k])
			}
			w.int32(0)
		})
	})
}

// SetNodeVolume sets the software gain of the node bound as proxy: its
// Props param (SPA_TYPE_OBJECT_Props, spa/param/props.h) with
// channelVolumes, gain (linear, 0 silence, 1 unity) on each of channels
// channels. The daemon hands a client's node the param to apply
// (module-client-node), so a stream's own converter scales its samples;
// it needs W on the node, which a client of a socket with every
// permission holds. A channel count outside 1 to 64 or a gain outside 0
// to 1 is an error, and nothing is sent.
func (c *Conn) SetNodeVolume(proxy uint32, gain float32, channels int) error {
	if channels < 1 || channels > maxChannels {
		return fmt.Errorf("node volume: %d channels, want 1 to %d", channels, maxChannels)
	}
	if !(gain >= 0 && gain <= 1) {
		return fmt.Errorf("node volume: gain %v is outside 0 to 1", gain)
	}
	return c.send(proxy, nodeSetParam, nil, func(w *builder) {
		w.id(paramProps)
		w.int32(0)
		w.object(objectProps, paramProps, func() {
			w.property(propChannelVolumes, func() { w.floats(gain, channels) })
		})
	})
}

// Destroy asks the registry to destroy the object with global id id.
func (c *Conn) Destroy(id uint32) error {
	return c.send(idRegistry, registryDestroy, nil, func(w *builder) { w.uint32(id) })
}

// ClientError has the daemon send an error to the client bound as proxy,
// on that client's own proxies of the global with id global (0, the
// core, reaches every client: its core proxy's error event), with res a
// negative errno and message the text the client's library hands its
// error handler (src/pipewire/impl-client.c, client_error). The client
// is not disconnected by it.
func (c *Conn) ClientError(proxy, global uint32, res int32, message string) error {
	return c.send(proxy, clientError, nil, func(w *builder) {
		w.uint32(global)
		w.int32(res)
		w.string(message)
	})
}

// UpdatePermissions sets entries of the permission table of the client
// bound as proxy.
func (c *Conn) UpdatePermissions(proxy uint32, perms []Permission) error {
	return c.send(proxy, clientUpdatePermissions, nil, func(w *builder) {
		w.int32(int32(len(perms)))
		for _, p := range perms {
			w.uint32(p.ID)
			w.uint32(p.Bits)
		}
	})
}

// CreateSecurityContext has the daemon accept clients on listen (a
// listening Unix socket) until close (the read end of a pipe) is hung
// up, giving every client that connects there props, which the daemon
// never lets a client change when their keys start with
// "pipewire.sec." or "pipewire.access" (src/pipewire/impl-client.c,
// check_client_property_update). proxy is the bound SecurityContext.
// The daemon takes its own copies of both descriptors.
func (c *Conn) CreateSecurityContext(proxy uint32, listen, close *os.File, props map[string]string) error {
	keys := sortedKeys(props)
	return c.send(proxy, securityContextCreate, []int{int(listen.Fd()), int(close.Fd())}, func(w *builder) {
		w.fd(0)
		w.fd(1)
		w.dict(keys, props)
	})
}

func sortedKeys(props map[string]string) []string {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (c *Conn) newID() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.free) > 0 {
		id := c.free[0]
		c.free = c.free[1:]
		return id
	}
	id := c.next
	c.next++
	return id
}

// send writes one message; the connection's lock keeps messages whole
// and their sequence numbers in order.
func (c *Conn) send(id uint32, opcode uint8, fds []int, fill func(*builder)) error {
	w := &builder{}
	w.structure(func() { fill(w) })
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	msg := make([]byte, 0, headerSize+len(w.b))
	msg = le.AppendUint32(msg, id)
	msg = le.AppendUint32(msg, uint32(opcode)<<24|uint32(len(w.b)))
	msg = le.AppendUint32(msg, c.seq)
	msg = le.AppendUint32(msg, uint32(len(fds)))
	msg = append(msg, w.b...)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if _, _, err := c.c.WriteMsgUnix(msg, oob, nil); err != nil {
		return fmt.Errorf("writing to PipeWire: %w", err)
	}
	return nil
}

// read parses messages until the connection ends.
func (c *Conn) read() {
	defer close(c.done)
	defer close(c.events)
	var buf []byte
	chunk := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(28*4))
	for {
		n, oobn, _, _, err := c.c.ReadMsgUnix(chunk, oob)
		if oobn > 0 {
			closeRights(oob[:oobn])
		}
		if err != nil {
			c.fail(fmt.Errorf("reading from PipeWire: %w", err))
			return
		}
		if n == 0 {
			c.fail(errors.New("PipeWire closed the connection"))
			return
		}
		buf = append(buf, chunk[:n]...)
		for len(buf) >= headerSize {
			size := int(le.Uint32(buf[4:]) & 0xffffff)
			if headerSize+size > len(buf) {
				break
			}
			id, opcode := le.Uint32(buf), uint8(le.Uint32(buf[4:])>>24)
			if err := c.handle(id, opcode, buf[headerSize:headerSize+size]); err != nil {
				c.fail(err)
				c.c.Close()
				return
			}
			buf = buf[headerSize+size:]
		}
		if len(buf) > maxMessage+headerSize {
			c.fail(errors.New("a message from PipeWire is past the protocol's size"))
			c.c.Close()
			return
		}
		buf = slices.Clip(buf)
	}
}

func (c *Conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

// closeRights closes every descriptor an SCM_RIGHTS message passed: the
// daemon shares memory with its clients that way, and this client maps
// none.
func closeRights(oob []byte) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return
	}
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
}

// message is one decoded message from the daemon: an event for the
// caller, a ping to answer, a cookie, or a proxy id released.
type message struct {
	event    *Event
	ping     *[2]uint32 // id, seq
	cookie   *uint32
	released *uint32
}

// handle decodes one message and acts on it.
func (c *Conn) handle(id uint32, opcode uint8, body []byte) error {
	c.mu.Lock()
	node := c.nodes[id]
	c.mu.Unlock()
	var m message
	var err error
	if node {
		m, err = decodeNode(id, opcode, body)
	} else {
		m, err = decode(id, opcode, body)
	}
	if err != nil {
		return err
	}
	switch {
	case m.event != nil:
		c.events <- *m.event
	case m.ping != nil:
		return c.send(idCore, corePong, nil, func(w *builder) { w.uint32(m.ping[0]); w.uint32(m.ping[1]) })
	case m.cookie != nil:
		c.mu.Lock()
		c.cookie = *m.cookie
		c.mu.Unlock()
	case m.released != nil:
		c.mu.Lock()
		delete(c.nodes, *m.released)
		if rid := *m.released; rid > idRegistry && rid < c.next && !slices.Contains(c.free, rid) {
			c.free = append(c.free, rid)
			slices.Sort(c.free)
		}
		c.mu.Unlock()
	}
	return nil
}

// decode reads one message's payload; messages nobody needs decode to
// nothing. A payload that is not the message's shape is an error naming
// the message.
func decode(id uint32, opcode uint8, body []byte) (message, error) {
	bad := func(err error) (message, error) { return message{}, fmt.Errorf("message %d/%d: %w", id, opcode, err) }
	p, err := openStruct(body)
	if err != nil {
		return bad(err)
	}
	ints := func(n int) ([]uint32, error) {
		out := make([]uint32, n)
		for i := range out {
			v, err := p.uint32()
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	switch {
	case id == idCore && opcode == coreEventInfo:
		v, err := ints(2)
		if err != nil {
			return bad(err)
		}
		return message{cookie: &v[1]}, nil
	case id == idCore && opcode == coreEventPing:
		v, err := ints(2)
		if err != nil {
			return bad(err)
		}
		return message{ping: &[2]uint32{v[0], v[1]}}, nil
	case id == idCore && opcode == coreEventDone:
		v, err := ints(2)
		if err != nil {
			return bad(err)
		}
		return message{event: &Event{Done: &v[1]}}, nil
	case id == idCore && opcode == coreEventError:
		v, err := ints(3)
		if err != nil {
			return bad(err)
		}
		msg, err := p.string()
		if err != nil {
			return bad(err)
		}
		return message{event: &Event{Error: &Error{ID: v[0], Seq: v[1], Res: int32(v[2]), Message: msg}}}, nil
	case id == idCore && (opcode == coreEventBoundID || opcode == coreEventBoundProps):
		v, err := ints(2)
		if err != nil {
			return bad(err)
		}
		return message{event: &Event{Bound: &Bound{Proxy: v[0], Global: v[1]}}}, nil
	case id == idCore && opcode == coreEventRemoveID:
		v, err := ints(1)
		if err != nil {
			return bad(err)
		}
		return message{released: &v[0]}, nil
	case id == idRegistry && opcode == registryEventGlobal:
		v, err := ints(2)
		if err != nil {
			return bad(err)
		}
		g := Global{ID: v[0], Permissions: v[1]}
		if g.Type, err = p.string(); err != nil {
			return bad(err)
		}
		if g.Version, err = p.uint32(); err != nil {
			return bad(err)
		}
		if g.Props, err = p.dict(); err != nil {
			return bad(err)
		}
		return message{event: &Event{Global: &g}}, nil
	case id == idRegistry && opcode == registryEventGlobalRemove:
		v, err := ints(1)
		if err != nil {
			return bad(err)
		}
		return message{event: &Event{Removed: &v[0]}}, nil
	}
	return message{}, nil
}

// decodeNode reads one message to a bound node proxy: its info event
// (spa_node_info marshalled by node_marshal_info in
// src/modules/module-protocol-native/protocol-native.c: id, the two port
// maxima, the change mask as a Long, the two port counts, the state, the
// error, then the properties as a dict). An info that changes neither
// the properties nor the state, and other messages, decode to nothing.
func decodeNode(proxy uint32, opcode uint8, body []byte) (message, error) {
	if opcode != nodeEventInfo {
		return message{}, nil
	}
	bad := func(err error) (message, error) {
		return message{}, fmt.Errorf("node info on proxy %d: %w", proxy, err)
	}
	p, err := openStruct(body)
	if err != nil {
		return bad(err)
	}
	id, err := p.uint32()
	if err != nil {
		return bad(err)
	}
	for range 2 { // max inputs, max outputs
		if err := p.skip(); err != nil {
			return bad(err)
		}
	}
	mask, err := p.int64()
	if err != nil {
		return bad(err)
	}
	for range 2 { // inputs, outputs
		if err := p.skip(); err != nil {
			return bad(err)
		}
	}
	state, err := p.id()
	if err != nil {
		return bad(err)
	}
	if err := p.skip(); err != nil { // error
		return bad(err)
	}
	props, err := p.dict()
	if err != nil {
		return bad(err)
	}
	if mask&(nodeChangeProps|nodeChangeState) == 0 {
		return message{}, nil
	}
	if mask&nodeChangeProps == 0 {
		// The properties did not change; the dict holds what the
		// daemon had at hand, not necessarily the node's properties.
		props = nil
	}
	return message{event: &Event{NodeInfo: &NodeInfo{Proxy: proxy, ID: id, Props: props, State: NodeState(state)}}}, nil
}
