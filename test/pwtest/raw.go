// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// RawObject is one pw-dump entry decoded loosely, for the objects
// pipewire.Graph does not model (clients, metadata).
type RawObject struct {
	// ID and Type are the object's id and type.
	ID uint32 `json:"id"`
	// Type is e.g. "PipeWire:Interface:Client".
	Type string `json:"type"`
	// Info holds the props of objects other than metadata.
	Info *struct {
		Props map[string]any `json:"props"`
	} `json:"info"`
	// Props is where pw-dump puts a metadata object's properties.
	Props map[string]any `json:"props"`
	// Metadata are a metadata object's entries.
	Metadata []struct {
		Subject uint32          `json:"subject"`
		Key     string          `json:"key"`
		Type    string          `json:"type"`
		Value   json.RawMessage `json:"value"`
	} `json:"metadata"`
}

// InfoProps returns the object's info.props, or nil.
func (o RawObject) InfoProps() map[string]any {
	if o.Info == nil {
		return nil
	}
	return o.Info.Props
}

// RawDump runs pw-dump and decodes every object loosely.
func (d *Daemons) RawDump(ctx context.Context) ([]RawObject, error) {
	cmd := d.Command(ctx, "pw-dump", "-N")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("pw-dump: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var objs []RawObject
	if err := json.Unmarshal(out, &objs); err != nil {
		return nil, fmt.Errorf("pw-dump: %w", err)
	}
	return objs, nil
}

// Metadata returns the subject-0 entries of the metadata object named
// name (metadata.name), key to JSON value, or nil when there is no such
// object.
func (d *Daemons) Metadata(ctx context.Context, name string) (map[string]json.RawMessage, error) {
	objs, err := d.RawDump(ctx)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.Type != "PipeWire:Interface:Metadata" || o.Props["metadata.name"] != name {
			continue
		}
		m := map[string]json.RawMessage{}
		for _, e := range o.Metadata {
			if e.Subject == 0 {
				m[e.Key] = e.Value
			}
		}
		return m, nil
	}
	return nil, nil
}
