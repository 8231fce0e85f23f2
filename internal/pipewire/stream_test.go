// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// The whole recorded pw-dump -m session, batch by batch: the first batch
// is the graph, nodes come and go, ids are reused, and the end of the
// output is a clean end.
func TestReadStreamRecorded(t *testing.T) {
	data := readFile(t, "testdata/pw-dump-monitor.json")
	var graphs []*Graph
	err := ReadStream(bytes.NewReader(data), func(g *Graph) error {
		graphs = append(graphs, g)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(graphs) != 45 {
		t.Fatalf("%d batches, want 45", len(graphs))
	}
	first := graphs[0]
	if first.Objects != 46 {
		t.Errorf("first batch: %d objects, want 46", first.Objects)
	}
	for _, name := range []string{"liken.audio.card0-pcm3", "liken.audio.card1-pcm0"} {
		n, ok := first.NodeByName(name)
		if !ok || n.State != NodeStateSuspended || n.Declared == nil {
			t.Errorf("first batch: %s = %+v", name, n)
		}
	}
	// Batch 7: the tone plays; batch 23 removes pw-record's node 50;
	// batch 28 creates test.extra with id 50; batch 33 removes it.
	if n, _ := graphs[6].NodeByName("liken.audio.card0-pcm3"); n.State != NodeStateRunning || len(graphs[6].LinksOf(n.ID)) != 2 {
		t.Errorf("batch 7: card0-pcm3 %q with %d links, want running with 2", n.State, len(graphs[6].LinksOf(n.ID)))
	}
	if n, ok := graphs[21].Node(50); !ok || n.Name != "pw-record" {
		t.Errorf("batch 22: node 50 = %+v, want pw-record", n)
	}
	if _, ok := graphs[22].Node(50); ok {
		t.Error("batch 23: node 50 still there after its removal")
	}
	n, ok := graphs[27].Node(50)
	if !ok || n.Name != "test.extra" || n.Declared == nil || *n.Declared != (Declared{Card: 5, PCM: 2}) {
		t.Errorf("batch 28: node 50 = %+v, want test.extra declared card 5 PCM 2", n)
	}
	if _, ok := graphs[32].NodeByName("test.extra"); ok {
		t.Error("batch 33: test.extra still there")
	}
	last := graphs[44]
	if last.Objects != 42 || len(last.Links) != 0 || len(last.Nodes) != 4 {
		t.Errorf("last: %d objects, %d links, %d nodes; want 42, 0, 4", last.Objects, len(last.Links), len(last.Nodes))
	}
	// Earlier snapshots are not changed by later batches.
	if _, ok := graphs[27].NodeByName("test.extra"); !ok {
		t.Error("a later batch changed an earlier snapshot")
	}

	// Read one byte at a time, the same.
	count := 0
	if err := ReadStream(iotest.OneByteReader(bytes.NewReader(data)), func(*Graph) error { count++; return nil }); err != nil || count != 45 {
		t.Errorf("one byte at a time: %d batches, %v", count, err)
	}
}

// Output cut in the middle of a batch is a failed read after the whole
// batches before it, never a part of the cut one.
func TestReadStreamTruncated(t *testing.T) {
	data := readFile(t, "testdata/pw-dump-monitor.json")
	// Cut inside the last batch.
	cut := bytes.LastIndex(data, []byte("\n["))
	var got int
	err := ReadStream(bytes.NewReader(data[:cut+20]), func(*Graph) error { got++; return nil })
	if !errors.Is(err, ErrBadDump) || !strings.Contains(err.Error(), "batch 45") {
		t.Errorf("cut in batch 45: %v", err)
	}
	if got != 44 {
		t.Errorf("%d snapshots before the cut, want 44", got)
	}
	// Garbage between batches.
	garbled := append(append([]byte{}, data[:cut+1]...), []byte("Segmentation fault\n")...)
	got = 0
	if err := ReadStream(bytes.NewReader(garbled), func(*Graph) error { got++; return nil }); !errors.Is(err, ErrBadDump) || got != 44 {
		t.Errorf("garbage after batch 44: %d snapshots, %v", got, err)
	}
	// fn's error ends the read as it is.
	stop := errors.New("stop")
	if err := ReadStream(bytes.NewReader(data), func(*Graph) error { return stop }); err != stop {
		t.Errorf("fn error: %v", err)
	}
}

// A bad batch leaves the stream as it was; a good one after it applies.
func TestStreamApplyAtomic(t *testing.T) {
	s := NewStream()
	g, err := s.Apply([]byte(`[{"id": 1, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "a"}}},
		{"id": 2, "type": "PipeWire:Interface:Port"}]`))
	if err != nil || len(g.Nodes) != 1 || g.Objects != 2 {
		t.Fatalf("first batch: %+v, %v", g, err)
	}
	bad := `[{"id": 1, "info": null}, {"id": 3, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": 5}}}, {"id": "x"`
	if _, err := s.Apply([]byte(bad)); !errors.Is(err, ErrBadDump) || !strings.Contains(err.Error(), "unexpected end") {
		t.Errorf("bad batch: %v", err)
	}
	if g := s.Graph(); len(g.Nodes) != 1 || g.Nodes[0].Name != "a" || g.Objects != 2 || s.Batches() != 1 {
		t.Errorf("after a bad batch: %+v (%d batches)", g, s.Batches())
	}
	// Removal, an unknown removal, a replacement of a port id by a node.
	g, err = s.Apply([]byte(`[{"id": 1, "info": null}, {"id": 77, "info": null},
		{"id": 2, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "b"}}}]`))
	if err != nil || len(g.Nodes) != 1 || g.Nodes[0].ID != 2 || g.Nodes[0].Name != "b" || g.Objects != 1 {
		t.Errorf("second batch: %+v, %v", g, err)
	}
	// A node id taken by a link stops being a node.
	g, _ = s.Apply([]byte(`[{"id": 2, "type": "PipeWire:Interface:Link", "info": {"output-node-id": 9}}]`))
	if len(g.Nodes) != 0 || len(g.Links) != 1 {
		t.Errorf("id reused by a link: %+v", g)
	}
	// A removal entry with a type is not a removal but an object with no
	// info; one without info at all is skipped.
	if g, err := s.Apply([]byte(`[{"id": 5}]`)); err != nil || len(g.Skipped) != 1 {
		t.Errorf("an entry with neither type nor info: %+v, %v", g, err)
	}
}

// One object of a batch that cannot be read is skipped and the rest of
// the batch applies; an unreadable update of a known id ends the old
// object, and the next batch's skips replace the last ones.
func TestStreamSkipsOne(t *testing.T) {
	s := NewStream()
	_, err := s.Apply([]byte(`[{"id": 1, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "a"}}},
		{"id": 2, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "b"}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.Apply([]byte(`[{"id": 1, "type": "PipeWire:Interface:Node", "info": {"props": []}},
		7, {"id": 3, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "c"}}}]`))
	if err != nil || len(g.Skipped) != 2 {
		t.Fatalf("%+v, %v", g, err)
	}
	if _, ok := g.NodeByName("a"); ok {
		t.Error("node 1 kept its old reading after an unreadable update")
	}
	if _, ok := g.NodeByName("b"); !ok {
		t.Error("node 2 lost")
	}
	if _, ok := g.NodeByName("c"); !ok {
		t.Error("node 3 of the same batch not applied")
	}
	if g, _ := s.Apply([]byte(`[]`)); g.Skipped != nil {
		t.Errorf("skips carried over: %v", g.Skipped)
	}
}

// A batch past MaxBatchBytes ends the stream as a failed read, after
// the batches before it.
func TestReadStreamBounded(t *testing.T) {
	elem := `{"id": 1, "type": "PipeWire:Interface:Port", "info": {"props": {"x": "` + strings.Repeat("a", 1<<19) + `"}}}`
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, `[{"id": 0, "type": "PipeWire:Interface:Core", "info": {"cookie": 9}}]`+"\n[")
		for i := 0; i <= MaxBatchBytes/len(elem)+1; i++ {
			if _, err := io.WriteString(pw, elem+","); err != nil {
				return
			}
		}
		pw.Close()
	}()
	var got []*Graph
	err := ReadStream(pr, func(g *Graph) error { got = append(got, g); return nil })
	pr.Close()
	if !errors.Is(err, ErrBadDump) || !strings.Contains(err.Error(), "batch 2") || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("oversize batch: %v", err)
	}
	if len(got) != 1 || got[0].Cookie != 9 {
		t.Errorf("snapshots before it: %+v", got)
	}
}

// A batch that only brings or removes a client leaves the graph's
// Revision as it was; one that changes a node, a link, a device or the
// cookie moves it, and so does a removal of a node.
func TestStreamRevisionCountsGraphChanges(t *testing.T) {
	s := NewStream()
	apply := func(batch string) *Graph {
		t.Helper()
		g, err := s.Apply([]byte(batch))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	node := `{"id": 40, "type": "PipeWire:Interface:Node", "info": {"state": "suspended", "props": {"node.name": "a"}}}`
	first := apply(`[{"id": 0, "type": "PipeWire:Interface:Core", "info": {"cookie": 7}}, ` + node + `]`)
	steps := []struct {
		batch   string
		changes bool
	}{
		{`[{"id": 90, "type": "PipeWire:Interface:Client", "info": {"props": {"application.name": "probe"}}}]`, false},
		{`[{"id": 90, "type": "PipeWire:Interface:Client", "info": {"props": {"application.name": "probe", "x": 1}}}]`, false},
		{`[{"id": 90, "info": null}]`, false},
		{`[{"id": 91, "type": "PipeWire:Interface:Port", "info": {}}, {"id": 91, "info": null}]`, false},
		{`[{"id": 0, "type": "PipeWire:Interface:Core", "info": {"cookie": 7}}]`, false},
		{`[` + node + `]`, true}, // reprinted whole, as a state change reprints it
		{`[{"id": 0, "type": "PipeWire:Interface:Core", "info": {"cookie": 8}}]`, true},
		{`[{"id": 41, "type": "PipeWire:Interface:Link", "info": {"output-node-id": 40, "input-node-id": 42}}]`, true},
		{`[{"id": 41, "info": null}]`, true},
		{`[{"id": 40, "type": "PipeWire:Interface:Client", "info": {}}]`, true}, // the node's id reused by a client
		{`[{"id": 40, "info": null}]`, false},
	}
	was := first.Revision
	for i, st := range steps {
		g := apply(st.batch)
		if moved := g.Revision != was; moved != st.changes {
			t.Errorf("batch %d %s: Revision %d after %d, want changed=%v", i+2, st.batch, g.Revision, was, st.changes)
		}
		was = g.Revision
	}
}
