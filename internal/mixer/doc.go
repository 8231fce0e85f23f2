// SPDX-License-Identifier: Apache-2.0

// Package mixer is a card's mixer controls as a Sink or Source shows and
// steers them: status.capabilities (what each control is), the values in
// status.observed.controls, and the writes spec.controls asks for.
//
// The pieces:
//
//   - [Read] lists the mixer-interface elements a person can set (BOOLEAN,
//     INTEGER, INTEGER64, ENUMERATED), each with its range, its enumerated
//     items, its current value and its dB range, into a [Mixer]. Jack
//     elements and the IEC958 status bytes are left out.
//   - [DecibelRange] reads a control's dB range out of its TLV data
//     (include/uapi/sound/tlv.h).
//   - [Mixer.Sink] and [Mixer.Source] apply the attach rule: which of a
//     card's controls belong to which of its endpoints; [HDMISlots] finds
//     the IEC958 switch of each HDMI/DP PCM.
//   - [Control.Format] spells a value as status shows it; [Control.Parse]
//     and [Control.ParseIntOrString] read a spec value, refusing what the
//     control would not take; [Write] sets it through the control
//     interface.
//
// Everything goes through an [alsa.Control], so the same code runs on the
// kernel's /dev/snd/controlC<N> and on a recorded card.
package mixer
