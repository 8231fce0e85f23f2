// SPDX-License-Identifier: Apache-2.0

package captureapi

// Info is the body of an information route as the capture container
// answers it: the PipeWire node a Sink or Source resolves to on its
// machine and the format a tap of it has now.
type Info struct {
	// Kind and Name are the object's ("Sink", "kitchen-hdmi-3").
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Node is the PipeWire node.name the object resolves to, and NodeID
	// its object id in the graph read for this answer.
	Node   string `json:"node"`
	NodeID uint32 `json:"nodeID"`
	// State is the node's state ("suspended", "idle", "running").
	State string `json:"state"`
	// Rate (Hz) and Channels are what a tap records at now: the node's
	// negotiated format while it runs, else what it declares or offers.
	Rate     int `json:"rate"`
	Channels int `json:"channels"`
	// Positions are the SPA channel names, one per channel, when known.
	Positions []string `json:"positions,omitempty"`
	// Monitor reports that a tap records the sink's monitor ports (what
	// it plays, before its mute) rather than a source.
	Monitor bool `json:"monitor"`
	// Formats are the media types a tap serves, most preferred first.
	Formats []string `json:"formats"`
}
