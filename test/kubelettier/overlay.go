package kubelettier

import (
	"fmt"
	"os"
	"path/filepath"
)

// Host paths the tier lays out for the pods, below HostDir: a sysfs with
// the recorded gamepad for the Bluetooth operator, and the recorded
// laptop's sound cards (dumps, stand-in /dev/snd, sysfs) for the audio
// pod.
const (
	HostDir      = "/run/liken-tier"
	BluetoothSys = HostDir + "/bluetooth/sys"
	SoundDir     = HostDir + "/sound"
)

// The Bluetooth adapter the BlueZ simulator registers (bluezsim-daemon's
// default) and bondfetch's stand-in kernel reports.
const (
	AdapterName    = "hci0"
	AdapterAddress = "00:1A:7D:DA:71:13"
)

// bluetoothOverlay changes in deploy/bluetooth only what this machine
// lacks. %[1]s is the base, %[2]d the API server's port.
const bluetoothOverlay = `# The kubelet tier's overlay of deploy/bluetooth: the base as a user
# applies it, changed only where this machine lacks something.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %[1]s
images:
  # No radio: this kernel has no Bluetooth stack, so bluetoothd cannot
  # start. The bluetoothd container runs the bluetoothd image with the
  # BlueZ simulator (test/bluezsim) added; its entrypoint starts the
  # pod's system bus as always and runs the simulator in bluetoothd's
  # place (the patch below). The simulator owns org.bluez on that bus
  # under BlueZ's bus policy and loads the bonds from the same tree.
  - name: ghcr.io/liken-sh/bluetoothd
    newName: liken.test/bluetoothd-bluezsim
    newTag: tier
  # No radio: no AF_BLUETOOTH socket to ask for the adapter's address.
  # bondfetch built with the hcisim tag answers that one ioctl from an
  # environment variable; everything else it does is the shipped code.
  - name: ghcr.io/liken-sh/bluetooth-bondfetch
    newName: liken.test/bluetooth-bondfetch-hcisim
    newTag: tier
patches:
  - patch: |-
      apiVersion: apps/v1
      kind: DaemonSet
      metadata:
        name: bluetooth-operator
        namespace: liken-system
      spec:
        template:
          spec:
            initContainers:
              - name: bondfetch
                # No registry: every image was imported into containerd.
                imagePullPolicy: Never
                # No radio: no USB adapter whose usbfs node leads to an
                # hciN in sysfs, so the adapter is named by index, and
                # the stand-in kernel reports its address.
                args: ["-adapter", "%[3]s"]
                env:
                  - name: BONDFETCH_HCISIM
                    value: "%[3]s=%[4]s"
                  # No kube-proxy: the API server is reached on the
                  # host's loopback (the pod has hostNetwork).
                  - name: KUBERNETES_SERVICE_HOST
                    value: "127.0.0.1"
                  - name: KUBERNETES_SERVICE_PORT
                    value: "%[2]d"
              - name: bluetoothd
                imagePullPolicy: Never
                # No radio: the simulator in bluetoothd's place.
                args: ["-bluetoothd", "/usr/local/bin/bluezsim-daemon"]
            containers:
              - name: operator
                imagePullPolicy: Never
                # No radio: the gamepad's HID device is in a sysfs laid
                # out as the kernel lays it out, from a recording, at
                # the same path as on the host (its links are absolute).
                args: ["-sys-root", "` + BluetoothSys + `"]
                env:
                  - name: KUBERNETES_SERVICE_HOST
                    value: "127.0.0.1"
                  - name: KUBERNETES_SERVICE_PORT
                    value: "%[2]d"
                volumeMounts:
                  - name: tier-sysfs
                    mountPath: ` + BluetoothSys + `
                    readOnly: true
            volumes:
              - name: tier-sysfs
                hostPath:
                  path: ` + BluetoothSys + `
                  type: Directory
`

// audioOverlay changes in deploy/audio only what this machine lacks.
// %[1]s is the base, %[2]d the API server's port.
const audioOverlay = `# The kubelet tier's overlay of deploy/audio: the base as a user applies
# it, changed only where this machine lacks something.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %[1]s
patches:
  - patch: |-
      apiVersion: apps/v1
      kind: DaemonSet
      metadata:
        name: audio-operator
        namespace: liken-system
      spec:
        template:
          spec:
            # No kube-proxy: the API server listens on the host's
            # loopback only, which a pod reaches only from the host's
            # network namespace.
            hostNetwork: true
            initContainers:
              - name: declare
                # No registry: every image was imported into containerd.
                imagePullPolicy: Never
                # No sound card: the cards are a recorded laptop's
                # (control-interface dumps, stand-in /dev/snd, sysfs),
                # and every output is declared on ALSA's null device.
                args: ["declare", "-recorded-cards", "/run/liken-tier/sound/cards", "-dev-snd", "/run/liken-tier/sound/snd", "-sys-root", "/run/liken-tier/sound/sys", "-alsa-path", "null", "-rate", "48000"]
                env:
                  - name: KUBERNETES_SERVICE_HOST
                    value: "127.0.0.1"
                  - name: KUBERNETES_SERVICE_PORT
                    value: "%[2]d"
                volumeMounts:
                  - name: tier-sound
                    mountPath: /run/liken-tier/sound
                    readOnly: true
              - name: pipewire
                imagePullPolicy: Never
              - name: wireplumber
                imagePullPolicy: Never
            containers:
              - name: operator
                imagePullPolicy: Never
                args: ["-recorded-cards", "/run/liken-tier/sound/cards", "-dev-snd", "/run/liken-tier/sound/snd", "-sys-root", "/run/liken-tier/sound/sys", "-alsa-path", "null", "-rate", "48000"]
                env:
                  - name: KUBERNETES_SERVICE_HOST
                    value: "127.0.0.1"
                  - name: KUBERNETES_SERVICE_PORT
                    value: "%[2]d"
                  # hostNetwork (above): the metrics listen on the
                  # host's loopback only.
                  - name: METRICS_ADDRESS
                    value: "127.0.0.1:9200"
                volumeMounts:
                  - name: tier-sound
                    mountPath: /run/liken-tier/sound
                    readOnly: true
              - name: capture
                imagePullPolicy: Never
                env:
                  - name: KUBERNETES_SERVICE_HOST
                    value: "127.0.0.1"
                  - name: KUBERNETES_SERVICE_PORT
                    value: "%[2]d"
                  - name: CAPTURE_ADDRESS
                    value: "127.0.0.1:9201"
            volumes:
              - name: tier-sound
                hostPath:
                  path: ` + SoundDir + `
                  type: Directory
`

// WriteOverlays writes dir/bluetooth and dir/audio, the tier's overlays of
// the bases in root/deploy, for an API server on 127.0.0.1:apiPort, and
// returns their directories.
func WriteOverlays(root, dir string, apiPort int) (bluetooth, audio string, err error) {
	bluetooth, audio = filepath.Join(dir, "bluetooth"), filepath.Join(dir, "audio")
	// kustomize takes a base by relative path only.
	rel := func(overlay, base string) string {
		r, err := filepath.Rel(overlay, filepath.Join(root, "deploy", base))
		if err != nil {
			return filepath.Join(root, "deploy", base)
		}
		return r
	}
	files := map[string]string{
		bluetooth: fmt.Sprintf(bluetoothOverlay, rel(bluetooth, "bluetooth"), apiPort, AdapterName, AdapterAddress),
		audio:     fmt.Sprintf(audioOverlay, rel(audio, "audio"), apiPort),
	}
	for d, content := range files {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", "", err
		}
		if err := os.WriteFile(filepath.Join(d, "kustomization.yaml"), []byte(content), 0o644); err != nil {
			return "", "", err
		}
	}
	return bluetooth, audio, nil
}
