// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/liken-sh/operators/internal/atomicfile"
)

// Profile is the WirePlumber profile the pod runs
// (`wireplumber --profile=main-embedded`). WirePlumber 0.5 defines it as
// main plus mixin.systemwide-session and mixin.stateless: no logind, no
// portal, no device reservation, no stored state.
const Profile = "main-embedded"

// WirePlumberDropInDir is where the pod mounts WirePlumber's drop-in
// directory (deploy/audio/operator.yaml's wireplumber-config volume). WirePlumber merges
// /usr/share/wireplumber/wireplumber.conf.d first and this one second.
const WirePlumberDropInDir = "/etc/wireplumber/wireplumber.conf.d"

// File names of the generated WirePlumber fragments, in
// WirePlumberDropInDir.
const (
	BluetoothFragment = "60-liken-bluetooth.conf"
	VolumeFragment    = "61-liken-volume.conf"
)

// BluetoothConf returns the fragment that turns WirePlumber's Bluetooth
// monitor on, for a pod whose claim delivered a media bus
// (DBUS_SYSTEM_BUS_ADDRESS). The machine is an A2DP source: it sends
// audio to speakers and headphones. Declaring the a2dp_sink role instead
// would make it a receiver that phones stream to. The headset profiles
// (HFP/HSP) stay off, so a headset never switches to its low-quality
// two-way profile, and nothing is stored: the pod keeps no state.
func BluetoothConf() []byte {
	return []byte(`# Written by audio-operator declare because the pod's claim delivered a
# media bus (DBUS_SYSTEM_BUS_ADDRESS). This machine plays to Bluetooth
# speakers as an A2DP source; it is never a sink that phones play to, and
# the headset profiles are off.
wireplumber.profiles = {
  main-embedded = {
    hardware.bluetooth = required
    monitor.bluez = required
    monitor.bluez-midi = disabled
  }
}

wireplumber.settings = {
  bluetooth.autoswitch-to-headset-profile = false
  bluetooth.use-persistent-storage = false
}

monitor.bluez.properties = {
  bluez5.roles = [ a2dp_source ]
  bluez5.hfphsp-backend = "none"
}
`)
}

// VolumeConf returns the fragment that sets a new sink's volume to unity
// (1.0, linear). WirePlumber's own default is 0.4, a value meant for a
// desktop whose user turns it up, and this pod stores no volumes to
// restore.
func VolumeConf() []byte {
	return []byte(`# Written by audio-operator declare: sinks start at unity gain. There is
# no stored volume to restore and no user at a volume slider.
wireplumber.settings = {
  device.routes.default-sink-volume = 1.0
}
`)
}

// WriteWirePlumberFragments writes VolumeConf always and BluetoothConf
// when mediaBus is true into dir (created 0755 if needed), each
// atomically with mode 0644, and returns the paths written. With mediaBus
// false a Bluetooth fragment left by an earlier run of this pod is
// removed, so WirePlumber's configuration follows the claim it runs
// under. The error names the file that failed.
func WriteWirePlumberFragments(dir string, mediaBus bool) ([]string, error) {
	var written []string
	vol := filepath.Join(dir, VolumeFragment)
	if err := atomicfile.WriteFile(vol, VolumeConf(), 0o644); err != nil {
		return written, err
	}
	written = append(written, vol)
	bt := filepath.Join(dir, BluetoothFragment)
	if !mediaBus {
		if err := os.Remove(bt); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return written, fmt.Errorf("remove stale %s: %w", bt, err)
		}
		return written, nil
	}
	if err := atomicfile.WriteFile(bt, BluetoothConf(), 0o644); err != nil {
		return written, err
	}
	return append(written, bt), nil
}

// BakedFile is a configuration file the image carries, at Path relative
// to the data directory /usr/share. Its place is /usr/share, not /etc,
// because the pod mounts emptyDir volumes over /etc/pipewire/pipewire.conf.d
// and /etc/wireplumber/wireplumber.conf.d, which would hide it.
type BakedFile struct {
	// Path is relative to /usr/share, with forward slashes.
	Path string
	// Content is the file's text.
	Content []byte
}

// BakedFiles returns the image's own PipeWire and WirePlumber fragments:
//
//   - wireplumber/wireplumber.conf.d/50-audio-operator.conf: the
//     main-embedded profile without the ALSA and ALSA-MIDI monitors (they
//     enumerate cards through udev, and the pod has none; the declaration
//     names the PCMs instead), without Bluetooth until BluetoothConf
//     enables it, without cameras, and without the session-bus
//     connection (there is no session bus); and the component that
//     keeps stream links across a WirePlumber restart (KeepLinksScript).
//   - wireplumber/scripts/liken/keep-links.lua: KeepLinksScript.
//   - wireplumber/wireplumber.conf.d/51-access-rules.conf: a client that
//     PipeWire's legacy access check classed as a Flatpak client gets
//     every permission. A client in another PID namespace (every other
//     container, every consumer pod) has a peer pid of 0, the flatpak
//     check fails on it (measured) and the reference's drill found
//     WirePlumber then left its streams unlinked. With the access file
//     below no client is classed so; this rule is the second line.
//   - pipewire/pipewire.conf.d/50-pipewire-access.conf: both sockets are
//     "unrestricted" (module-access's access.socket), so no client waits
//     for permissions the session manager has to grant. Without it, a
//     pw-dump from another PID namespace never got an answer (measured
//     with PipeWire 1.4.2: the startup probe would hang); with it, it
//     answers at once. Access is decided by who gets the socket mounted
//     (the CDI edits).
func BakedFiles() []BakedFile {
	return []BakedFile{
		{Path: "wireplumber/wireplumber.conf.d/50-audio-operator.conf", Content: []byte(`# Baked into the audio-operator image. There is no udev in the pod, so the
# ALSA monitors that enumerate cards through it are off; the declare
# container names every PCM in PipeWire's context.objects instead.
# Bluetooth stays off unless declare writes 60-liken-bluetooth.conf.
wireplumber.profiles = {
  main-embedded = {
    hardware.audio = required
    monitor.alsa = disabled
    monitor.alsa-midi = disabled
    hardware.bluetooth = disabled
    hardware.video-capture = disabled
    support.dbus = disabled
    ` + KeepLinksComponent + ` = required
  }
}

# Stream links outlive this WirePlumber, and the next one adopts them, so
# a restart of the wireplumber container does not silence a card sink.
wireplumber.components = [
  {
    name = liken/keep-links.lua, type = script/lua
    provides = ` + KeepLinksComponent + `
    requires = [ hooks.linking.target.prepare-link, hooks.linking.target.link ]
  }
]
`)},
		{Path: "wireplumber/scripts/liken/keep-links.lua", Content: KeepLinksScript},
		{Path: "wireplumber/wireplumber.conf.d/51-access-rules.conf", Content: []byte(`# Baked into the audio-operator image. Clients connect from other
# containers, in other PID namespaces, where the peer's pid cannot be
# read and the client looks sandboxed. Who may connect is decided by who
# gets the socket mounted, so such a client gets every permission.
access.rules = [
  {
    matches = [ { access = "flatpak" } ]
    actions = {
      update-props = {
        access = "unrestricted"
        default_permissions = "all"
      }
    }
  }
]
`)},
		{Path: "pipewire/pipewire.conf.d/50-pipewire-access.conf", Content: []byte(`# Baked into the audio-operator image. Both sockets grant every
# permission at connect time; no client waits for the session manager to
# grant what it may see. The socket's mount is the access control.
module.access.args = {
  access.socket = {
    pipewire-0 = "unrestricted"
    pipewire-0-manager = "unrestricted"
  }
}
`)},
	}
}

// WriteBakedFiles writes BakedFiles under root (the image build passes
// the root of its /usr/share), each atomically with mode 0644, creating
// directories 0755.
func WriteBakedFiles(root string) error {
	for _, f := range BakedFiles() {
		if err := atomicfile.WriteFile(filepath.Join(root, filepath.FromSlash(f.Path)), f.Content, 0o644); err != nil {
			return err
		}
	}
	return nil
}
