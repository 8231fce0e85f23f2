// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// PipeWire's names of the IEC 958 codecs (spa/param/audio/iec958-types.h,
// the short names of SPA_TYPE_INFO_AudioIEC958Codec), as an ALSA node's
// iec958Codecs prop and its IEC 958 EnumFormat name them.
const (
	IEC958PCM      = "PCM"
	IEC958DTS      = "DTS"
	IEC958AC3      = "AC3"
	IEC958MPEG     = "MPEG"
	IEC958MPEG2AAC = "MPEG2-AAC"
	IEC958EAC3     = "EAC3"
	IEC958TrueHD   = "TrueHD"
	IEC958DTSHD    = "DTS-HD"
)

// iec958Names are the codec names SetIEC958Codecs writes.
var iec958Names = []string{IEC958PCM, IEC958DTS, IEC958AC3, IEC958MPEG, IEC958MPEG2AAC, IEC958EAC3, IEC958TrueHD, IEC958DTSHD}

// An ALSA sink node of PipeWire 1.4.2 takes IEC 958 codecs only when its
// api.alsa.path starts with "hdmi" or "iec958" (spa/plugins/alsa/alsa-pcm.c
// and alsa-pcm-sink.c: is_hdmi, is_iec958); any other node has no
// iec958Codecs in its Props and offers no IEC 958 format. On such a node
// (measured with PipeWire 1.4.2 on an ALSA file PCM named hdmi_*):
//
//   - Props always lists PCM among iec958Codecs, which the sink adds to
//     whatever is written, and a write replaces the list: writing [ PCM ]
//     takes the compressed codecs away again.
//   - A write is announced at once, on a node that has never run as on
//     one that has: Props and EnumFormat show it in the next pw-dump
//     (unlike a channel volume; see volume.go).
//   - EnumFormat gains an "iec958" entry whose iec958Codec choice lists
//     the codecs the PCM can carry, in PipeWire's enum order (PCM, DTS,
//     AC3, ...) whatever the order written. E-AC-3 needs the PCM to run at
//     four times the stream's rate and TrueHD and DTS-HD eight channels
//     (alsa-pcm.c, codec_supported), so a node whose audio.rate pins it to
//     48 kHz offers no EAC3 however it is asked.

// IEC958Literal validates codecs and returns the Props literal pw-cli
// writes for them, e.g. `{ iec958Codecs: [ "PCM", "AC3" ] }`. Every name
// is one of PipeWire's (IEC958PCM ...), named once; an empty list writes
// PCM alone.
func IEC958Literal(codecs []string) (string, error) {
	if len(codecs) == 0 {
		codecs = []string{IEC958PCM}
	}
	quoted := make([]string, 0, len(codecs))
	for i, c := range codecs {
		if !slices.Contains(iec958Names, c) {
			return "", fmt.Errorf("IEC 958 codecs: %q is not one of PipeWire's (%s)", c, strings.Join(iec958Names, ", "))
		}
		if slices.Contains(codecs[:i], c) {
			return "", fmt.Errorf("IEC 958 codecs: %s is named twice", c)
		}
		quoted = append(quoted, `"`+c+`"`)
	}
	return "{ iec958Codecs: [ " + strings.Join(quoted, ", ") + " ] }", nil
}

// SetIEC958Codecs writes the IEC 958 codecs node (a node id from a Graph
// read from the same PipeWire) passes through, with `pw-cli set-param
// <node> Props <literal>` (IEC958Literal): PipeWire adds PCM, and the
// list replaces the node's, so nil leaves it PCM alone. Without a
// deadline on ctx it applies DefaultWriteTimeout. It returns
// IEC958Literal's error for a name that is not PipeWire's, an error for
// node 0, and runPwCli's errors (ErrNoSuchObject for an id PipeWire does
// not have). A node that takes no IEC 958 codecs (its ALSA path is not an
// hdmi or iec958 PCM) takes the write without an error and ignores it:
// Node.IEC958Codecs says which nodes take them.
func (r Remote) SetIEC958Codecs(ctx context.Context, node uint32, codecs []string) error {
	if node == 0 {
		return errors.New("IEC 958 codecs: node id 0 is PipeWire's core, not a node")
	}
	lit, err := IEC958Literal(codecs)
	if err != nil {
		return err
	}
	return r.setParam(ctx, node, "Props", lit)
}

// parseIEC958Codecs reads iec958Codecs from the first Props entry that
// has it: nil when none has (the node takes no IEC 958 codecs), else the
// names as listed, with anything that is not a string left out.
func parseIEC958Codecs(entries []json.RawMessage) []string {
	for _, e := range entries {
		var p struct {
			Codecs []any `json:"iec958Codecs"`
		}
		if json.Unmarshal(e, &p) != nil || p.Codecs == nil {
			continue
		}
		out := make([]string, 0, len(p.Codecs))
		for _, c := range p.Codecs {
			if s, ok := c.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// parseIEC958Offered reads the codecs of the first EnumFormat entry whose
// mediaSubtype is iec958: its iec958Codec, a name or a choice whose
// default and alternatives are names (each named once, in the order
// given). Nil when no entry offers IEC 958.
func parseIEC958Offered(entries []json.RawMessage) []string {
	for _, e := range entries {
		var f struct {
			MediaSubtype any `json:"mediaSubtype"`
			Codec        any `json:"iec958Codec"`
		}
		if json.Unmarshal(e, &f) != nil || f.MediaSubtype != "iec958" {
			continue
		}
		out := []string{}
		add := func(v any) {
			if s, ok := v.(string); ok && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		switch c := f.Codec.(type) {
		case string:
			add(c)
		case map[string]any:
			add(c["default"])
			for i := 1; i <= len(c); i++ {
				add(c[fmt.Sprintf("alt%d", i)])
			}
		}
		return out
	}
	return nil
}
