// SPDX-License-Identifier: Apache-2.0

// Command demo is README's first command: it starts a real local control
// plane with one simulated node, runs the drivers this repository has
// against it, and prints what a person wants to see: every published device
// with its attributes and taints, and claims allocated by the real
// scheduler and prepared into the CDI specs a container runtime reads.
// hack/demo.sh builds and runs it.
//
// What runs: liken.sh's raw hardware for the node, published by the
// inventory driver of deploy/inventory (internal/inventory) over a
// desktop's sysfs laid out as the kernel lays it out; the Bluetooth operator,
// against a BlueZ simulator on a real dbus-daemon and a recorded-shape
// sysfs; the audio operator, with declare, on a recorded laptop's sound
// cards and real PipeWire and WirePlumber; and the driver core's small
// test driver.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/testdriver"
)

func main() {
	nodeName := flag.String("node", "node-1", "name of the simulated node")
	wait := flag.Bool("wait", false, "keep the cluster running after the demo until Ctrl-C, for kubectl")
	verbose := flag.Bool("v", false, "show the drivers' logs")
	flag.Parse()
	log.SetFlags(log.Ltime)
	if !*verbose {
		klog.SetOutput(io.Discard)
		klog.LogToStderr(false)
	}
	if err := run(*nodeName, *wait); err != nil {
		log.Fatal(err)
	}
}

func run(nodeName string, wait bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := harness.Start(ctx, harness.Options{Logf: log.Printf})
	if err != nil {
		return err
	}
	defer c.Stop()
	log.Printf("control plane ready in %s: etcd, kube-apiserver, kube-scheduler, kube-controller-manager", c.ReadyIn().Round(time.Millisecond))
	if _, err := c.AddNode(ctx, nodeName); err != nil {
		return err
	}
	if _, err := c.WaitForServiceAccount(ctx, "default", "default"); err != nil {
		return err
	}
	// The node's kubelet and CDI directories live in the cluster's work
	// directory, as /var/lib/kubelet and /var/run/cdi would on a machine.
	root := filepath.Join(c.Dir(), "node")
	for _, f := range admissionPolicyFiles {
		if err := c.ApplyAdmissionPoliciesFile(ctx, f); err != nil {
			return err
		}
	}

	fmt.Println("\n== liken.sh: the inventory driver (deploy/inventory) publishing a desktop's sound controller and Bluetooth adapter from sysfs")
	stopInventory, err := inventoryDemo(ctx, c, nodeName, root)
	if err != nil {
		return err
	}
	defer stopInventory()
	if err := printDevices(ctx, os.Stdout, c, "liken.sh"); err != nil {
		return err
	}

	fmt.Println("\n== Bluetooth: bluetooth.liken.sh on a simulated radio with a gamepad in pairing mode and a paired speaker")
	stopBT, sim, err := bluetoothDemo(ctx, c, nodeName, func() error { return printDevices(ctx, os.Stdout, c, "bluetooth.liken.sh") })
	if err != nil {
		return err
	}
	defer stopBT()

	fmt.Println("\n== Audio: audio.liken.sh on a recorded laptop's cards and the paired Bluetooth speaker, with real PipeWire and WirePlumber")
	stopAudio, listen, err := audioDemo(ctx, c, nodeName, func() error { return printDevices(ctx, os.Stdout, c, "audio.liken.sh") }, sim)
	if err != nil {
		return err
	}
	defer stopAudio()

	fmt.Println("\n== The driver core's test driver, e2e.liken.sh: opaque claim parameters and a NoSchedule taint")
	if err := c.ApplyDeviceClass(ctx, testdriver.DeviceClass()); err != nil {
		return err
	}
	opts := dra.Options{
		NodeName: nodeName, KubeClient: c.Client(), SettleQuiet: 300 * time.Millisecond,
		RegistrarDir: filepath.Join(root, "plugins_registry"),
		PluginDir:    filepath.Join(root, "plugins", testdriver.Name),
		CDIDir:       filepath.Join(root, "cdi"),
	}
	driver, err := testdriver.Start(ctx, opts, []testdriver.Pad{
		{Name: "pad-blue", Color: "blue", Event: 7},
		{Name: "pad-red", Color: "red", Event: 9, Gone: true},
	})
	if err != nil {
		return err
	}
	defer driver.Stop()
	if err := waitForSlice(ctx, c, testdriver.Name, nil); err != nil {
		return err
	}
	claim := testdriver.ClaimForColor("default", "blue-pad", "blue", `{"led":"off"}`)
	fmt.Printf("claim default/%s (selector: color == \"blue\", opaque config {\"led\":\"off\"})\n", claim.Name)
	if err := allocateAndPrepare(ctx, c, claim, "player", nodeName, testdriver.Name, opts); err != nil {
		return err
	}

	fmt.Println("\n== Every device the node publishes now")
	if err := printDevices(ctx, os.Stdout, c, ""); err != nil {
		return err
	}
	fmt.Println("\n== Listening: what the USB headset's Sink plays, captured through audio-api")
	capture, err := keptCapture()
	if err != nil {
		return err
	}
	stopListen, listenAddr, listenSink, err := listen(capture)
	if err != nil {
		return err
	}
	defer stopListen()
	if wait {
		// The plugins go to the work directory, removed with the cluster;
		// the build cache makes a second build take seconds.
		plugins := filepath.Join(c.Dir(), "bin")
		fmt.Printf("\nThe cluster, audio-api and the tone keep running until Ctrl-C. In another shell in this repository,"+
			" put the matching kubectl and the two plugins on PATH:\n"+
			"  export KUBECONFIG=%s\n"+
			"  go build -trimpath -o %s/ ./cmd/kubectl-liken-audio ./cmd/kubectl-liken-bluetooth\n"+
			"  export PATH=%s:%s:$PATH\n"+
			"  kubectl get resourceslices,resourceclaims,sinks,peripherals -A\n"+
			"  kubectl liken bluetooth list\n"+
			"  kubectl liken audio --api-address %s --force capture %s -t 0,5 -o now.wav\n"+
			"(kubectl liken audio dials audio-api at --api-address, there being no kubelet to port-forward through;"+
			" --force skips its version check against an operator DaemonSet the demo does not run.)\n"+
			"The capture above stays at %s when the demo ends; the cluster and its work directory go.\n",
			c.Kubeconfig(), plugins, plugins, binDir(ctx), listenAddr, listenSink, capture)
		<-ctx.Done()
	} else {
		fmt.Print(endNote(capture))
	}
	return nil
}

// admissionPolicyFiles are the deploy files holding the
// ValidatingAdmissionPolicies a deployed cluster enforces, applied before
// any driver starts so that the demo refuses what a deployment refuses
// (a Sink whose spec.controls carries a control character, for one). The
// policies bound to an operator's ServiceAccount match nothing here, the
// demo's drivers writing as the cluster's admin. TestAdmissionPolicyFiles
// fails when deploy/ gains a policy file this list lacks.
var admissionPolicyFiles = []string{
	"deploy/audio/admissionpolicy.yaml",
	"deploy/bluetooth/admissionpolicy.yaml",
	"deploy/inventory/admissionpolicy.yaml",
}

func binDir(ctx context.Context) string {
	dir, err := harness.BinDir(ctx, nil)
	if err != nil {
		return ""
	}
	return dir
}

// endNote is what the demo prints last without -wait: the work directory
// goes, and the capture, written outside it (keptCapture), stays at path;
// its last line names the file.
func endNote(path string) string {
	return "\n(The work directory with these files is removed now; run with -wait to keep the cluster and look around.)\n" +
		"The capture is kept, and yours to open or delete: " + path + "\n"
}
