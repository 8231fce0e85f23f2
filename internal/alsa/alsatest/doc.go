// SPDX-License-Identifier: Apache-2.0

// Package alsatest builds and checks what package alsa reads, for tests,
// the demo and the VM tier; no product code imports it.
//
//   - [ImportAlsaInfo], [ImportAlsactlState] and [ImportAmixerContents]
//     turn what people post about real cards (alsa-info.sh reports,
//     alsactl state, `amixer contents`) into [alsa.Dump] values, which
//     [alsa.Recorded] serves.
//   - [Exercise] and [ExerciseDevSnd] are the real-kernel checks the VM
//     tier runs: every ioctl of [alsa.Control] against real cards,
//     including the event a write causes. This package's tests run the
//     same checks against recorded cards.
package alsatest
