// SPDX-License-Identifier: Apache-2.0

package kubelettier

import (
	"fmt"
	"os"
	"path/filepath"
)

// Host paths the tier lays out for the pods, below HostDir: a sysfs with
// the recorded gamepad for the Bluetooth operator, the recorded laptop's
// sound cards (dumps, stand-in /dev/snd, sysfs) for the audio pod, and a
// desktop's sysfs (a sound controller, a btusb adapter) for the inventory
// driver.
const (
	HostDir      = "/run/liken-tier"
	BluetoothSys = HostDir + "/bluetooth/sys"
	SoundDir     = HostDir + "/sound"
	// InventoryDir holds the desktop the inventory driver reads
	// (fakesys.LayOutDesktop); its sysfs is InventoryDir/sys.
	InventoryDir = HostDir + "/inventory"
	InventorySys = InventoryDir + "/sys"
)

// Loopback ports of the hostNetwork pods (every one shares the host's
// network namespace, so no two may bind the same port): the audio
// operator's metrics and capture container (9200, 9201), audio-api's
// HTTPS listener (8443, the port kubectl liken audio forwards to) and
// metrics, and the inventory driver's metrics.
const (
	APIPort              = 8443
	APIMetricsPort       = 9202
	InventoryMetricsPort = 9203
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
              - name: input-relay
                imagePullPolicy: Never
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
// %[1]s is the base, %[2]d the API server's port, %[3]d and %[4]d
// audio-api's HTTPS and metrics ports.
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
  - patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: audio-api
        namespace: liken-system
      spec:
        template:
          spec:
            # No kube-proxy: the API server listens on the host's
            # loopback only. In the host's network namespace audio-api
            # also reaches the capture containers by their pod IP,
            # which for the hostNetwork audio pod is the Node's
            # InternalIP, 127.0.0.1 (test/node sets it).
            hostNetwork: true
            containers:
              - name: api
                imagePullPolicy: Never
                env:
                  - name: KUBERNETES_SERVICE_HOST
                    value: "127.0.0.1"
                  - name: KUBERNETES_SERVICE_PORT
                    value: "%[2]d"
                  # hostNetwork: listen on the loopback only, and the
                  # metrics beside the audio operator's.
                  - name: API_ADDRESS
                    value: "127.0.0.1:%[3]d"
                  - name: METRICS_ADDRESS
                    value: "127.0.0.1:%[4]d"
  # hostNetwork: the metrics port the probes name moves with
  # METRICS_ADDRESS (ports merge by number, so a strategic patch would
  # add a second port named metrics).
  - target:
      kind: Deployment
      name: audio-api
    patch: |-
      - op: test
        path: /spec/template/spec/containers/0/ports/1/name
        value: metrics
      - op: replace
        path: /spec/template/spec/containers/0/ports/1/containerPort
        value: %[4]d
`

// inventoryOverlay changes in deploy/inventory only what this machine
// lacks. %[1]s is the base, %[2]d the API server's port, %[3]d the
// driver's metrics port.
const inventoryOverlay = `# The kubelet tier's overlay of deploy/inventory: the base as a user
# applies it, changed only where this machine lacks something.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %[1]s
patches:
  - patch: |-
      apiVersion: apps/v1
      kind: DaemonSet
      metadata:
        name: liken-inventory
        namespace: liken-system
      spec:
        template:
          spec:
            # No kube-proxy: the API server listens on the host's
            # loopback only, which a pod reaches only from the host's
            # network namespace.
            hostNetwork: true
            containers:
              - name: driver
                # No registry: every image was imported into containerd.
                imagePullPolicy: Never
                env:
                  - name: KUBERNETES_SERVICE_HOST
                    value: "127.0.0.1"
                  - name: KUBERNETES_SERVICE_PORT
                    value: "%[2]d"
                  - name: METRICS_ADDRESS
                    value: "127.0.0.1:%[3]d"
                  # No sound card and no Bluetooth adapter: the driver
                  # reads a desktop's sysfs laid out as the kernel lays
                  # it out (an Intel HDA controller, a btusb adapter;
                  # test/fakesys/desktop.tree) instead of /sys. /dev
                  # stays the host's, where the tier creates the
                  # adapter's usbfs node.
                  - name: LIKEN_INVENTORY_SYS_ROOT
                    value: ` + InventorySys + `
                volumeMounts:
                  - name: tier-sysfs
                    mountPath: ` + InventorySys + `
                    readOnly: true
                  # No shared /dev: this machine's /dev is a private
                  # mount, and containerd refuses HostToContainer
                  # propagation from a mount that is neither shared nor
                  # a slave. Every node the driver stats here exists
                  # before it starts, so nothing needs to propagate.
                  - name: host-dev
                    mountPath: /host/dev
                    mountPropagation: None
            volumes:
              - name: tier-sysfs
                hostPath:
                  path: ` + InventorySys + `
                  type: Directory
  # hostNetwork: the metrics port moves with METRICS_ADDRESS, off the
  # audio operator's.
  - target:
      kind: DaemonSet
      name: liken-inventory
    patch: |-
      - op: test
        path: /spec/template/spec/containers/0/ports/0/name
        value: metrics
      - op: replace
        path: /spec/template/spec/containers/0/ports/0/containerPort
        value: %[3]d
`

// Overlays are the directories of the tier's overlays, one per base.
type Overlays struct {
	Inventory, Bluetooth, Audio string
}

// WriteOverlays writes dir/inventory, dir/bluetooth and dir/audio, the
// tier's overlays of the bases in root/deploy, for an API server on
// 127.0.0.1:apiPort.
func WriteOverlays(root, dir string, apiPort int) (Overlays, error) {
	o := Overlays{Inventory: filepath.Join(dir, "inventory"), Bluetooth: filepath.Join(dir, "bluetooth"), Audio: filepath.Join(dir, "audio")}
	// kustomize takes a base by relative path only.
	rel := func(overlay, base string) string {
		r, err := filepath.Rel(overlay, filepath.Join(root, "deploy", base))
		if err != nil {
			return filepath.Join(root, "deploy", base)
		}
		return r
	}
	files := map[string]string{
		o.Inventory: fmt.Sprintf(inventoryOverlay, rel(o.Inventory, "inventory"), apiPort, InventoryMetricsPort),
		o.Bluetooth: fmt.Sprintf(bluetoothOverlay, rel(o.Bluetooth, "bluetooth"), apiPort, AdapterName, AdapterAddress),
		o.Audio:     fmt.Sprintf(audioOverlay, rel(o.Audio, "audio"), apiPort, APIPort, APIMetricsPort),
	}
	for d, content := range files {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return o, err
		}
		if err := os.WriteFile(filepath.Join(d, "kustomization.yaml"), []byte(content), 0o644); err != nil {
			return o, err
		}
	}
	return o, nil
}
