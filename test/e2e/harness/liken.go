// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// The raw hardware of a simulated node, as liken's own DRA driver
// publishes it on a real machine, and the DeviceClasses the bluetooth and
// audio operators' DaemonSets claim through.
const (
	// LikenDriver is the driver name of liken's hardware-inventory driver;
	// unqualified attribute names in its slices belong to this domain.
	LikenDriver = "liken.sh"
	// BluetoothAdapterDevice is the USB Bluetooth adapter's device name.
	BluetoothAdapterDevice = "usb-1-8-1-0"
	// SoundControllerDevice is the PCI sound controller's device name.
	SoundControllerDevice = "pci-0000-00-1f-3"
	// BluetoothAdapterClass selects devices bound to the btusb kernel driver.
	BluetoothAdapterClass = "bluetooth-adapter"
	// SoundCardClass selects devices with sound.liken.sh/supportsSound.
	SoundCardClass = "sound-card"
)

// LikenDevices returns the two devices PublishLikenDevices publishes: the
// Bluetooth adapter (driver "btusb", bus "usb") and the sound controller
// (driver "snd_hda_intel", bus "pci", sound.liken.sh/supportsSound true).
func LikenDevices() []resourceapi.Device {
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }
	return []resourceapi.Device{
		{
			Name: BluetoothAdapterDevice,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"driver": str("btusb"),
				"bus":    str("usb"),
			},
		},
		{
			Name: SoundControllerDevice,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"driver":                       str("snd_hda_intel"),
				"bus":                          str("pci"),
				"sound.liken.sh/supportsSound": {BoolValue: ptr.To(true)},
			},
		},
	}
}

// PublishLikenDevices writes (creates or replaces) the ResourceSlice
// "liken.sh-<node>" for driver liken.sh, pool <node>, spec.nodeName <node>,
// owned by the Node so it goes when the Node does, holding [LikenDevices].
// The Node must exist.
func (c *Cluster) PublishLikenDevices(ctx context.Context, node string) error {
	n, err := c.client.CoreV1().Nodes().Get(ctx, node, getOpts)
	if err != nil {
		return fmt.Errorf("harness: publish liken devices: %w", err)
	}
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: LikenDriver + "-" + node,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1",
				Kind:       "Node",
				Name:       n.Name,
				UID:        n.UID,
				Controller: ptr.To(true),
			}},
		},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   LikenDriver,
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			NodeName: &node,
			Devices:  LikenDevices(),
		},
	}
	slices := c.client.ResourceV1().ResourceSlices()
	_, err = slices.Create(ctx, slice, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var old *resourceapi.ResourceSlice
		if old, err = slices.Get(ctx, slice.Name, getOpts); err == nil {
			slice.ResourceVersion = old.ResourceVersion
			// A new generation tells the scheduler to drop the old
			// contents of the pool.
			slice.Spec.Pool.Generation = old.Spec.Pool.Generation + 1
			_, err = slices.Update(ctx, slice, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("harness: publish liken devices on %s: %w", node, err)
	}
	return nil
}

// LikenDeviceClasses returns the DeviceClasses the operators claim through:
// bluetooth-adapter (liken.sh devices bound to btusb) and sound-card
// (devices with sound.liken.sh/supportsSound true).
func LikenDeviceClasses() []*resourceapi.DeviceClass {
	class := func(name, cel string) *resourceapi.DeviceClass {
		return &resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourceapi.DeviceClassSpec{
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: cel}}},
			},
		}
	}
	return []*resourceapi.DeviceClass{
		class(BluetoothAdapterClass, `device.driver == "liken.sh" && device.attributes["liken.sh"].driver == "btusb"`),
		class(SoundCardClass, `has(device.attributes["sound.liken.sh"].supportsSound) && device.attributes["sound.liken.sh"].supportsSound`),
	}
}

// ApplyLikenDeviceClasses creates, or updates in place, the classes of
// [LikenDeviceClasses].
func (c *Cluster) ApplyLikenDeviceClasses(ctx context.Context) error {
	for _, dc := range LikenDeviceClasses() {
		if err := c.ApplyDeviceClass(ctx, dc); err != nil {
			return err
		}
	}
	return nil
}

// ApplyDeviceClass creates dc, or replaces the spec of the existing class
// of that name.
func (c *Cluster) ApplyDeviceClass(ctx context.Context, dc *resourceapi.DeviceClass) error {
	classes := c.client.ResourceV1().DeviceClasses()
	_, err := classes.Create(ctx, dc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var old *resourceapi.DeviceClass
		if old, err = classes.Get(ctx, dc.Name, getOpts); err == nil {
			old.Spec = dc.Spec
			_, err = classes.Update(ctx, old, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("harness: device class %s: %w", dc.Name, err)
	}
	return nil
}

// AddLikenNode is what a real machine with liken looks like to the API: the
// Node from [Cluster.AddNode], liken.sh's devices on it from
// [Cluster.PublishLikenDevices], and the operators' classes from
// [Cluster.ApplyLikenDeviceClasses].
func (c *Cluster) AddLikenNode(ctx context.Context, node string) error {
	if _, err := c.AddNode(ctx, node); err != nil {
		return err
	}
	if err := c.PublishLikenDevices(ctx, node); err != nil {
		return err
	}
	return c.ApplyLikenDeviceClasses(ctx)
}

// ApplyDeviceClassesFile applies every DeviceClass in a multi-document
// YAML file, such as deploy/bluetooth/deviceclasses.yaml, so tests and the
// demo use the classes a person deploys. Other kinds in the file are
// ignored. The path is relative to the module root unless absolute.
func (c *Cluster) ApplyDeviceClassesFile(ctx context.Context, path string) error {
	return eachDeployDocument(path, func(kind string, decode func(any) error) error {
		if kind != "DeviceClass" {
			return nil
		}
		var dc resourceapi.DeviceClass
		if err := decode(&dc); err != nil {
			return err
		}
		return c.ApplyDeviceClass(ctx, &dc)
	})
}

// eachDeployDocument reads the multi-document YAML file at path (relative
// to the module root unless absolute) and calls fn with each document's
// kind and a strict decoder for it; an error names the file and the
// document that did not parse, and fn's first error ends the walk.
func eachDeployDocument(path string, fn func(kind string, decode func(any) error) error) error {
	if !filepath.IsAbs(path) {
		root, err := ModuleRoot()
		if err != nil {
			return err
		}
		path = filepath.Join(root, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return fmt.Errorf("harness: %s document %d: %w", path, i, err)
		}
		decode := func(into any) error {
			if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
				return fmt.Errorf("harness: %s document %d: %w", path, i, err)
			}
			return nil
		}
		if err := fn(meta.Kind, decode); err != nil {
			return err
		}
	}
	return nil
}
