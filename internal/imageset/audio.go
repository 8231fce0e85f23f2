// SPDX-License-Identifier: Apache-2.0

package imageset

import (
	"github.com/liken-sh/operators/internal/ocibuild"
	"github.com/liken-sh/operators/internal/pipewire"
)

// Where Debian's packages put PipeWire's and WirePlumber's run-time
// loaded files.
const (
	libDir         = "/usr/lib/x86_64-linux-gnu"
	pipewireModDir = libDir + "/pipewire-0.3"
	spaPluginDir   = libDir + "/spa-0.2"
)

// pipewireModules are the PipeWire modules the pod's processes load:
// every module pipewire.conf and client.conf (pw-dump, pw-cli, pw-cat)
// load without "nofail", the ones WirePlumber loads as components, and
// combine-stream, which a claim's combined-sink process loads.
// The optional ones are left out: rt (no RTKit, no SYS_NICE in the pod),
// portal, x11-bell and jackdbus-detect. So are all the network, JACK,
// filter and pulse modules nothing here configures; they bring most of
// the full closure's size (libffado, libcrypto, fftw, webrtc).
// RequiredModulesPresent keeps this list honest against the configuration
// the image carries.
var pipewireModules = []string{
	"libpipewire-module-access.so",
	"libpipewire-module-adapter.so",
	"libpipewire-module-client-device.so",
	"libpipewire-module-client-node.so",
	"libpipewire-module-combine-stream.so",
	"libpipewire-module-link-factory.so",
	"libpipewire-module-metadata.so",
	"libpipewire-module-profiler.so",
	"libpipewire-module-protocol-native.so",
	"libpipewire-module-session-manager.so",
	"libpipewire-module-spa-device-factory.so",
	"libpipewire-module-spa-node-factory.so",
}

// spaPlugins are the SPA plugin directories the pod uses: support (the
// loop, logging, the dummy and freewheel drivers), alsa (the declared
// sinks), audioconvert and audiomixer (every audio node), control, and
// bluez5 with its codecs, for the Bluetooth speakers WirePlumber drives
// when the claim delivers a media bus.
var spaPlugins = []string{"support", "alsa", "audioconvert", "audiomixer", "control", "bluez5"}

// AudioOperator is the image every container of the audio pod runs
// (deploy/audio/operator.yaml): /usr/local/bin/audio-operator, the
// entrypoint, whose own modes run PipeWire, WirePlumber and pw-dump from
// /usr/bin; beside it the binaries it executes for the other modes, each
// its own so a container's memory is only its mode's:
// /usr/local/bin/audio-driver (the operator, declare, api: the ones with a
// Kubernetes client) and /usr/local/bin/audio-capture (capture), and the
// tools capture runs: pw-record, flac, opusenc, and coreutils'
// libstdbuf.so, preloaded into the encoders so their output is not held
// in stdio buffers. There is no shell.
//
// Configuration: PipeWire's and WirePlumber's stock files, the image's
// own fragments (pipewire.BakedFiles: the main-embedded profile without
// the ALSA monitor, the access rules for clients in other PID
// namespaces) under /usr/share, where the pod's emptyDir mounts on
// /etc/*/*.conf.d do not hide them, and ALSA's own configuration, which
// defines the hw and null devices the declaration names.
func AudioOperator(bin, tag string) ocibuild.Spec {
	files := make([]ocibuild.File, 0, len(pipewire.BakedFiles()))
	for _, f := range pipewire.BakedFiles() {
		files = append(files, ocibuild.File{Path: "/usr/share/" + f.Path, Content: f.Content, Mode: 0o644})
	}
	return with(ocibuild.Spec{
		Ref: ref("audio-operator", tag),
		Add: []ocibuild.Add{
			goBinary(bin, "audio-operator", "audio-operator"), goBinary(bin, "audio-driver", "audio-driver"),
			goBinary(bin, "audio-capture", "audio-capture"),
		},
		Paths: []string{
			"/usr/bin/pipewire", "/usr/bin/wireplumber",
			"/usr/bin/pw-dump", "/usr/bin/pw-cli", "/usr/bin/pw-cat", "/usr/bin/pw-record", "/usr/bin/wpctl",
			"/usr/bin/flac", "/usr/bin/opusenc", "/usr/libexec/coreutils/libstdbuf.so",
		},
		Trees: []ocibuild.Tree{
			{Path: pipewireModDir, Only: pipewireModules},
			{Path: spaPluginDir, Only: spaPlugins},
			{Path: libDir + "/wireplumber-0.5"},
			{Path: "/usr/share/pipewire"},
			{Path: "/usr/share/wireplumber"},
			{Path: "/usr/share/spa-0.2"},
			// ALSA's configuration without the UCM and topology files,
			// which serve the ALSA monitor the image turns off.
			{Path: "/usr/share/alsa", Only: []string{"alsa.conf", "cards", "ctl", "pcm"}},
		},
		Files: files,
		// The pod's volumes: the two drop-in directories, PipeWire's
		// runtime directory, the kubelet's and CDI's directories, and the
		// capture container's TLS Secret, the ServiceAccount token the
		// kubelet mounts in every container (the capture container's
		// TokenReviews use it), and audio-api's token for the capture
		// containers.
		Dirs: mountPoints(
			"/etc/pipewire/pipewire.conf.d", "/etc/wireplumber/wireplumber.conf.d",
			"/run/audio.liken.sh", "/run/cdi", "/run/audio-capture-tls",
			"/var/lib/kubelet/plugins/audio.liken.sh", "/var/lib/kubelet/plugins_registry",
			"/run/secrets/kubernetes.io/serviceaccount",
			// audio-api's projected token for the capture containers
			// (deploy/audio/api.yaml).
			"/run/secrets/audio.liken.sh/capture",
		),
		Entrypoint: []string{"/usr/local/bin/audio-operator"},
		Labels:     labels("audio-operator"),
		Checks:     []ocibuild.Check{{Name: "PipeWire modules the configuration requires", Func: RequiredModulesPresent}},
	})
}
