// SPDX-License-Identifier: Apache-2.0

// Package eld parses the EDID-Like Data block (ELD) that a graphics driver
// hands to the HDMI/DisplayPort audio codec when a monitor is connected.
//
// The ELD is the only place that says which monitor a PCM device plays
// into: its name, its PNP manufacturer and product code, the audio formats
// it accepts (short audio descriptors, SADs) and its speaker allocation.
// It reaches user space in two forms, and this package reads both:
//
//   - the binary block, the value of the PCM control element named "ELD"
//     (ALSA control interface, element type BYTES) — [Parse];
//   - the text the kernel prints into /proc/asound/card<N>/eld#<codec>.<pin>
//     for a person — [ParseProc].
//
// The layout follows the kernel's reader, snd_hdmi_parse_eld in
// sound/pci/hda/hda_eld.c (sound/hda/common/hda_eld.c in newer trees), and
// its printer snd_hdmi_print_eld_info. Where the kernel accepts a block,
// so does this package, with two deliberate additions: an empty or
// all-zero block is reported as [ErrEmpty] (no monitor), and a block with
// no short audio descriptor is invalid, as the kernel's hdmi driver has
// treated it since December 2021.
//
// The block has no serial number, so [ELD.MonitorID], the identity that
// pairs a monitor's speakers with its screen across drivers, names a
// monitor model, not a unit.
package eld
