// SPDX-License-Identifier: Apache-2.0

package imageset

import "github.com/liken-sh/operators/internal/ocibuild"

// AudioOperatorCLI is the audio operator's kubectl plugin image,
// <audio-operator image>-cli at the operator's tag, which liken's plugin
// manager pulls to install `kubectl liken audio`: the static
// kubectl-liken-audio binary and nothing it would run. Its entrypoint is
// the plugin, so `--version` on the image names the release.
func AudioOperatorCLI(bin, tag string) ocibuild.Spec {
	return with(ocibuild.Spec{
		Ref:        ref("audio-operator-cli", tag),
		Add:        []ocibuild.Add{goBinary(bin, "kubectl-liken-audio", "kubectl-liken-audio")},
		Entrypoint: []string{"/usr/local/bin/kubectl-liken-audio"},
		Labels:     labels("audio-operator-cli"),
	})
}

// BluetoothOperatorCLI is the Bluetooth operator's kubectl plugin image,
// <bluetooth-operator image>-cli, laid out as AudioOperatorCLI is:
// `kubectl liken bluetooth` and nothing else.
func BluetoothOperatorCLI(bin, tag string) ocibuild.Spec {
	return with(ocibuild.Spec{
		Ref:        ref("bluetooth-operator-cli", tag),
		Add:        []ocibuild.Add{goBinary(bin, "kubectl-liken-bluetooth", "kubectl-liken-bluetooth")},
		Entrypoint: []string{"/usr/local/bin/kubectl-liken-bluetooth"},
		Labels:     labels("bluetooth-operator-cli"),
	})
}

// CLIImages are the images of Specs that hold a kubectl plugin for a
// person's machine rather than a program a pod runs.
var CLIImages = []string{"audio-operator-cli", "bluetooth-operator-cli"}
