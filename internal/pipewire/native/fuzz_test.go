// SPDX-License-Identifier: Apache-2.0

package native

import (
	"math"
	"testing"
)

// A Global as PipeWire 1.4 sends it, built with the same encoder the
// client's own messages use.
func globalBody() []byte {
	w := &builder{}
	w.structure(func() {
		w.uint32(30)
		w.uint32(0o770)
		w.string(TypeNode)
		w.uint32(3)
		w.dict([]string{"node.name", "object.serial"}, map[string]string{"node.name": "liken.audio.card0-pcm3", "object.serial": "32"})
	})
	return w.b
}

// A node info as node_marshal_info writes it for a node of version 3.
func nodeInfoBody() []byte {
	w := &builder{}
	w.structure(func() {
		w.uint32(41)
		w.int32(0)
		w.int32(0)
		w.int64(0x1f)
		w.int32(0)
		w.int32(0)
		w.header(4, podID)
		w.b = le.AppendUint64(w.b, 2)
		w.string("")
		w.dict([]string{"media.class", "node.name"}, map[string]string{"media.class": "Audio/Sink", "node.name": "relabelled"})
		w.int32(0)
	})
	return w.b
}

func TestDecodeNodeInfo(t *testing.T) {
	m, err := decodeNode(5, nodeEventInfo, nodeInfoBody())
	if err != nil {
		t.Fatal(err)
	}
	n := m.event.NodeInfo
	if n.Proxy != 5 || n.ID != 41 || n.Props["media.class"] != "Audio/Sink" || n.Props["node.name"] != "relabelled" || n.State != NodeIdle {
		t.Errorf("node info %+v", n)
	}
	for k := range len(nodeInfoBody()) - 8 {
		if _, err := decodeNode(5, nodeEventInfo, nodeInfoBody()[:k]); err == nil {
			t.Fatalf("a node info cut at %d bytes decoded", k)
		}
	}
}

// An info whose change mask names the state alone carries the state and
// no properties: the dict then holds what the daemon had at hand.
func TestDecodeNodeInfoStateOnly(t *testing.T) {
	body := nodeInfoBody()
	le.PutUint64(body[8+16*3+8:], nodeChangeState) // the mask's Long, after the Struct header and three Ints
	m, err := decodeNode(5, nodeEventInfo, body)
	if err != nil {
		t.Fatal(err)
	}
	if n := m.event.NodeInfo; n == nil || n.Props != nil || n.State != NodeIdle {
		t.Errorf("state-only node info %+v", n)
	}
	le.PutUint64(body[8+16*3+8:], 1) // input ports alone
	if m, err := decodeNode(5, nodeEventInfo, body); err != nil || m.event != nil {
		t.Errorf("an info about ports alone: %+v, %v", m.event, err)
	}
}

// SetNodeVolume's param, read back: a Struct of the param id, flags and
// a Props Object whose one property is channelVolumes, an Array of
// Floats.
func TestSetNodeVolumeParam(t *testing.T) {
	w := &builder{}
	w.structure(func() {
		w.id(paramProps)
		w.int32(0)
		w.object(objectProps, paramProps, func() {
			w.property(propChannelVolumes, func() { w.floats(0.25, 3) })
		})
	})
	p, err := openStruct(w.b)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := p.id(); err != nil || id != paramProps {
		t.Fatalf("param id %d, %v", id, err)
	}
	if _, err := p.int32(); err != nil {
		t.Fatal(err)
	}
	obj, typ, err := p.member(podObject)
	if err != nil || typ != podObject {
		t.Fatalf("object: %v", err)
	}
	if le.Uint32(obj) != objectProps || le.Uint32(obj[4:]) != paramProps || le.Uint32(obj[8:]) != propChannelVolumes {
		t.Errorf("object header % x", obj[:16])
	}
	arr := obj[16:]
	if le.Uint32(arr) != 8+3*4 || le.Uint32(arr[4:]) != podArray || le.Uint32(arr[8:]) != 4 || le.Uint32(arr[12:]) != podFloat {
		t.Errorf("array header % x", arr[:16])
	}
	for i := range 3 {
		if v := math.Float32frombits(le.Uint32(arr[16+4*i:])); v != 0.25 {
			t.Errorf("channel %d: %v", i, v)
		}
	}
	if len(w.b)%8 != 0 {
		t.Errorf("the message is %d bytes, not a multiple of 8", len(w.b))
	}
}

func TestDecodeGlobal(t *testing.T) {
	m, err := decode(idRegistry, registryEventGlobal, globalBody())
	if err != nil {
		t.Fatal(err)
	}
	g := m.event.Global
	if g.ID != 30 || g.Type != TypeNode || g.Version != 3 || g.Props["node.name"] != "liken.audio.card0-pcm3" || g.Props["object.serial"] != "32" {
		t.Errorf("global %+v", g)
	}
	for n := range len(globalBody()) {
		if _, err := decode(idRegistry, registryEventGlobal, globalBody()[:n]); err == nil {
			t.Fatalf("a Global cut at %d bytes decoded", n)
		}
	}
}

// FuzzDecode: whatever the daemon (or anything on its socket) sends,
// decoding never panics and never allocates past what the payload holds.
func FuzzDecode(f *testing.F) {
	f.Add(uint32(idRegistry), uint8(registryEventGlobal), globalBody())
	w := &builder{}
	w.structure(func() { w.uint32(0); w.uint32(7); w.int32(-1); w.string("no permission") })
	f.Add(uint32(idCore), uint8(coreEventError), w.b)
	w = &builder{}
	w.structure(func() { w.uint32(0); w.uint32(4242) })
	f.Add(uint32(idCore), uint8(coreEventInfo), w.b)
	f.Add(uint32(3), uint8(nodeEventInfo), nodeInfoBody())
	f.Fuzz(func(t *testing.T, id uint32, opcode uint8, body []byte) {
		var m message
		var err error
		if id%4 == 3 {
			m, err = decodeNode(3, opcode%2, body)
		} else {
			m, err = decode(id%4, opcode%9, body)
		}
		if err != nil {
			return
		}
		if g := m.event; g != nil && g.Global != nil && len(g.Global.Props) > len(body)/16 {
			t.Fatalf("%d props from %d bytes", len(g.Global.Props), len(body))
		}
		if g := m.event; g != nil && g.NodeInfo != nil && len(g.NodeInfo.Props) > len(body)/16 {
			t.Fatalf("%d node props from %d bytes", len(g.NodeInfo.Props), len(body))
		}
	})
}
