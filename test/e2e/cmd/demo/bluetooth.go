// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/bluetoothcli"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/internal/dbusd"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/fakesys"
)

// The simulated radio: the node's adapter, a gamepad in pairing mode (the
// 8BitDo NES30 Pro of the recorded fixtures) and a paired speaker.
const (
	adapterAddr = "00:1A:7D:DA:71:13"
	padAddr     = "E4:17:D8:C5:67:6D"
	speakerAddr = "A0:AB:51:33:B7:12"
	bondsNS     = "liken-system"
)

// bluetoothDemo runs the Bluetooth operator against the BlueZ simulator on
// a real dbus-daemon and a recorded-shape sysfs, then shows a consumer's
// claim on the gamepad, the gamepad disconnecting, and the bonds in Secrets.
func bluetoothDemo(ctx context.Context, c *harness.Cluster, nodeName string, show func() error) (stop func(), sim *bluezsim.Sim, err error) {
	root := filepath.Join(c.Dir(), "node")
	client := c.Client()
	if err := c.ApplyDeviceClassesFile(ctx, "deploy/bluetooth/deviceclasses.yaml"); err != nil {
		return nil, nil, err
	}
	if err := c.ApplyCRDs(ctx, "deploy/bluetooth/crds"); err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, nil, err
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bondsNS}}, metav1.CreateOptions{}); err != nil {
		return nil, nil, err
	}
	// An open bus policy, so the demo needs no root; the tests run BlueZ's own.
	sim, err = bluezsim.Start(ctx, bluezsim.Options{StorageDir: filepath.Join(root, "var-lib-bluetooth"), Policy: dbusd.PolicyOpen})
	if err != nil {
		return nil, nil, err
	}
	steps := []func() error{
		func() error { _, err := sim.AddAdapter("hci0", adapterAddr); return err },
		func() error {
			_, err := sim.AddDevice("hci0", padAddr, bluezsim.Device{Name: "8Bitdo NES30 Pro", Class: 0x002508, Modalias: "usb:v2DC8p3820d0100", UUIDs: []string{"00001124-0000-1000-8000-00805f9b34fb"}})
			return err
		},
		// A paired A2DP speaker, switched off until the audio pod's
		// WirePlumber has registered its endpoints.
		func() error {
			_, err := sim.AddSpeaker("hci0", speakerAddr, bluezsim.Speaker{Name: "Kitchen speaker",
				Codecs: []bluezsim.Codec{bluezsim.SBC, bluezsim.AptX}, AbsoluteVolume: true, Volume: 100})
			return err
		},
		func() error {
			_, err := fakesys.BluetoothHID(filepath.Join(root, "sys"), "0005:2DC8:3820.0001", "8Bitdo NES30 Pro", padAddr, adapterAddr, 7)
			return err
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			sim.Stop()
			return nil, nil, err
		}
	}
	opts := dra.Options{
		RegistrarDir: filepath.Join(root, "plugins_registry"), PluginDir: filepath.Join(root, "plugins", bluetooth.DriverName),
		CDIDir: filepath.Join(root, "cdi"), SettleQuiet: 300 * time.Millisecond,
	}
	opCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- bluetooth.Run(opCtx, bluetooth.Config{
			NodeName: nodeName, Namespace: bondsNS, KubeClient: client, Dynamic: dyn, Adapter: bdaddr.MustParse(adapterAddr),
			Bus: bluez.Options{Address: sim.Address()}, BondsRoot: sim.StorageDir(),
			SysRoot: filepath.Join(root, "sys"), DevRoot: "/dev", DRA: opts, BondSettle: 300 * time.Millisecond,
		})
	}()
	stop = func() { cancel(); <-done; sim.Stop() } //nolint:errcheck // the demo is ending; the simulator's exit is in its log

	// The operator creates the radio's Adapter on its first pass and
	// reports its node right after: pairing waits for that report.
	for i := 0; ; i++ {
		a, err := dyn.Resource(btv1.AdaptersResource).Get(ctx, bdaddr.MustParse(adapterAddr).Key(), metav1.GetOptions{})
		if err == nil {
			if node, _, _ := unstructured.NestedString(a.Object, "status", "node"); node != "" {
				break
			}
			err = errors.New("its status names no node")
		}
		if i == 600 {
			stop()
			return nil, nil, fmt.Errorf("the operator never reported the Adapter: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The gamepad is in pairing mode: a person pairs it with the plugin
	// alone, then it connects as a paired pad does.
	fmt.Printf("\n$ kubectl liken bluetooth pair --device %s\n", padAddr)
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: os.Stdout, ErrOut: os.Stdout}
	if code := bluetoothcli.Execute(ctx, "demo", streams, []string{"--kubeconfig", c.Kubeconfig(), "-n", "default",
		"pair", "--device", padAddr, "--window", "60s"}); code != 0 {
		stop()
		return nil, nil, fmt.Errorf("kubectl liken bluetooth pair exited %d", code)
	}
	if err := sim.Connect("hci0", padAddr); err != nil {
		stop()
		return nil, nil, err
	}
	// The list and the table below show the pad connected, so both wait
	// for the operator to have seen the link come up: its Peripheral
	// Connected and Ready, and its device published without the
	// disconnected and no-input-node taints.
	if err := waitForPeripheral(ctx, dyn, padAddr, btv1.ConditionConnected, btv1.ConditionReady); err != nil {
		stop()
		return nil, nil, err
	}
	fmt.Printf("\n$ kubectl liken bluetooth list\n")
	_ = bluetoothcli.Execute(ctx, "demo", streams, []string{"--kubeconfig", c.Kubeconfig(), "list"})

	pad := bluetooth.ControllerName(bdaddr.MustParse(padAddr))
	hasTaint := func(d resourceapi.Device, key string) bool {
		return slices.ContainsFunc(d.Taints, func(t resourceapi.DeviceTaint) bool { return t.Key == key })
	}
	if err := waitForSlice(ctx, c, bluetooth.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool {
			return d.Name == pad && !hasTaint(d, bluetooth.TaintDisconnected) && !hasTaint(d, bluetooth.TaintNoInputNode)
		})
	}); err != nil {
		stop()
		return nil, nil, err
	}
	if err := show(); err != nil {
		stop()
		return nil, nil, err
	}

	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gamepad"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "pad", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "bluetooth-input"},
		}}}},
	}
	fmt.Printf("\nclaim default/gamepad (DeviceClass bluetooth-input: devices with the input attribute)\n")
	if err := allocateAndPrepare(ctx, c, claim, "emulator", nodeName, bluetooth.DriverName, opts); err != nil {
		stop()
		return nil, nil, err
	}

	if err := sim.Disconnect("hci0", padAddr, bluezsim.ReasonRemote); err != nil {
		stop()
		return nil, nil, err
	}
	start := time.Now()
	// Asleep, the pad is disconnected (NoExecute: the example's claim
	// tolerates it) and has no input node (NoSchedule: no new claim gets
	// a pad that is asleep now), although the demo's sysfs still lists
	// its uhid device (the demo does not take it away): disconnected
	// counts as no node whatever sysfs lists.
	if err := waitForSlice(ctx, c, bluetooth.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool {
			return d.Name == pad && hasTaint(d, bluetooth.TaintDisconnected) && hasTaint(d, bluetooth.TaintNoInputNode)
		})
	}); err != nil {
		stop()
		return nil, nil, err
	}
	fmt.Printf("\nthe gamepad fell asleep: %s gained the taints %s:NoExecute and %s:NoSchedule after %s (settle window %s)\n",
		pad, bluetooth.TaintDisconnected, bluetooth.TaintNoInputNode, time.Since(start).Round(10*time.Millisecond), opts.SettleQuiet)
	if err := finishEviction(ctx, c, "default", "emulator", "gamepad", bluetooth.DriverName, opts.RegistrarDir, start); err != nil {
		stop()
		return nil, nil, err
	}

	time.Sleep(time.Second) // the bond settle window
	secrets, err := client.CoreV1().Secrets(bondsNS).List(ctx, metav1.ListOptions{LabelSelector: bonds.AdapterLabel + "=" + bdaddr.MustParse(adapterAddr).Key()})
	if err != nil {
		stop()
		return nil, nil, err
	}
	fmt.Printf("bonds written back to Secrets in %s (bondfetch restores them when the pod restarts):\n", bondsNS)
	for _, s := range secrets.Items {
		fmt.Printf("  %s (%d keys)\n", s.Name, len(s.Data))
	}
	return stop, sim, nil
}

func printSpec(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	fmt.Printf("  CDI spec %s (what the container runtime reads):\n%s\n", path, indentJSON(data))
	return nil
}

// waitForPeripheral waits up to 30s for the Peripheral of the device at
// addr (status.address, in any namespace) to report every condition in
// conds with status True, and errors naming the address and the
// conditions otherwise.
func waitForPeripheral(ctx context.Context, dyn dynamic.Interface, addr string, conds ...string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		list, err := dyn.Resource(btv1.PeripheralsResource).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range list.Items {
				if a, _, _ := unstructured.NestedString(p.Object, "status", "address"); strings.EqualFold(a, addr) && conditionsTrue(p.Object, conds) {
					return nil
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the Peripheral of %s did not report %s True within 30s", addr, strings.Join(conds, " and "))
}

// conditionsTrue reports whether every condition type in conds has status
// True in obj's status.conditions.
func conditionsTrue(obj map[string]any, conds []string) bool {
	got, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	for _, want := range conds {
		if !slices.ContainsFunc(got, func(c any) bool {
			m, ok := c.(map[string]any)
			return ok && m["type"] == want && m["status"] == "True"
		}) {
			return false
		}
	}
	return true
}
