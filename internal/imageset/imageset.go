// SPDX-License-Identifier: Apache-2.0

package imageset

import (
	"path/filepath"
	"strings"

	"github.com/liken-sh/operators/internal/ocibuild"
)

// Repository is where the kustomize bases pull the images from.
const Repository = "ghcr.io/liken-sh"

// DefaultTag is the tag the kustomize bases name.
const DefaultTag = "latest"

// Commands are the Go commands the images carry, by the name `go build`
// gives their binaries (cmd/<name>). The build compiles each with
// CGO_ENABLED=0 into one directory and passes it to Specs.
var Commands = []string{"audio-operator", "audio-driver", "audio-capture", "bluetooth-operator", "bluetooth-input-relay", "bluetooth-bondfetch", "bluetoothd", "liken-inventory", "kubectl-liken-audio", "kubectl-liken-bluetooth"}

// Specs returns every image's spec; bin is the directory holding the
// binaries of Commands, tag the tag to give them.
func Specs(bin, tag string) []ocibuild.Spec {
	return []ocibuild.Spec{
		AudioOperator(bin, tag),
		Bluetoothd(bin, tag),
		BluetoothOperator(bin, tag),
		BluetoothBondfetch(bin, tag),
		LikenInventory(bin, tag),
		AudioOperatorCLI(bin, tag),
		BluetoothOperatorCLI(bin, tag),
	}
}

// ref is the reference of the image name at tag.
func ref(name, tag string) string { return Repository + "/" + name + ":" + tag }

// labels names the source of every image, which registries show.
func labels(name string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.source": "https://github.com/liken-sh/operators",
		"org.opencontainers.image.title":  name,
	}
}

// goBinary places the command's binary from bin at /usr/local/bin/<as>.
func goBinary(bin, command, as string) ocibuild.Add {
	return ocibuild.Add{Src: filepath.Join(bin, command), Path: "/usr/local/bin/" + as, Mode: 0o755}
}

// searchPath is the search path of every image: the binaries are named with
// absolute paths in the manifests, but dbus-daemon is found by name.
const searchPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Name is the image's short name, the last element of its repository:
// "audio-operator" for ghcr.io/liken-sh/audio-operator:latest.
func Name(spec ocibuild.Spec) string {
	repo, _, _ := strings.Cut(strings.TrimPrefix(spec.Ref, Repository+"/"), ":")
	return repo
}
