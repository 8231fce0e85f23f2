// Command demo is README's first command: it starts a real local control
// plane with one simulated node, runs the drivers this repository has
// against it, and prints what a person wants to see: every published device
// with its attributes and taints, and one claim allocated by the real
// scheduler and prepared into its CDI spec. hack/demo.sh builds and runs it.
//
// Today the drivers are liken.sh's simulated hardware (published by the
// harness, as liken does on a real machine) and the core's test driver; the
// Bluetooth and audio operators join as they are built.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/kubelet"
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

	if err := c.AddLikenNode(ctx, nodeName); err != nil {
		return err
	}
	if err := c.ApplyDeviceClass(ctx, testdriver.DeviceClass()); err != nil {
		return err
	}
	if _, err := c.WaitForServiceAccount(ctx, "default", "default"); err != nil {
		return err
	}

	// The node's kubelet directories and CDI directory live in the
	// cluster's work directory, as /var/lib/kubelet and /var/run/cdi would.
	root := c.Dir()
	opts := dra.Options{
		NodeName: nodeName, KubeClient: c.Client(), SettleQuiet: 300 * time.Millisecond,
		RegistrarDir: filepath.Join(root, "node", "plugins_registry"),
		PluginDir:    filepath.Join(root, "node", "plugins", testdriver.Name),
		CDIDir:       filepath.Join(root, "node", "cdi"),
	}
	driver, err := testdriver.Start(ctx, opts, []testdriver.Pad{
		{Name: "pad-blue", Color: "blue", Event: 7},
		{Name: "pad-red", Color: "red", Event: 9, Gone: true},
	})
	if err != nil {
		return err
	}
	defer driver.Stop()
	if err := waitForDriverSlice(ctx, c); err != nil {
		return err
	}
	if err := printDevices(ctx, os.Stdout, c); err != nil {
		return err
	}

	claim := testdriver.ClaimForColor("default", "blue-pad", "blue", `{"led":"off"}`)
	if _, err := c.Client().ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := c.Client().CoreV1().Pods("default").Create(ctx, testdriver.PodWithClaim("default", "player", nodeName, claim.Name), metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := c.WaitForPodScheduled(ctx, "default", "player"); err != nil {
		return err
	}
	allocated, err := c.WaitForClaimAllocated(ctx, "default", claim.Name)
	if err != nil {
		return err
	}
	r := allocated.Status.Allocation.Devices.Results[0]
	fmt.Printf("\nclaim default/%s (selector: color == \"blue\", config {\"led\":\"off\"})\n  allocated by kube-scheduler: driver %s, pool %s, device %s; pod default/player bound to %s\n",
		claim.Name, r.Driver, r.Pool, r.Device, nodeName)

	kl := kubelet.New(c.Client(), opts.RegistrarDir)
	defer kl.Close()
	plugin, err := kl.Discover(ctx, testdriver.Name)
	if err != nil {
		return err
	}
	resp, err := plugin.Prepare(ctx, allocated)
	if err != nil {
		return err
	}
	res := resp.Claims[string(allocated.UID)]
	if res.Error != "" {
		return fmt.Errorf("prepare: %s", res.Error)
	}
	fmt.Printf("  prepared through %s: CDI device %s\n", plugin.Endpoint(), res.Devices[0].CdiDeviceIds[0])
	specPath := filepath.Join(opts.CDIDir, testdriver.Name+"-"+string(allocated.UID)+".json")
	spec, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var pretty any
	if err := json.Unmarshal(spec, &pretty); err != nil {
		return fmt.Errorf("CDI spec %s: %w", specPath, err)
	}
	out, _ := json.MarshalIndent(pretty, "  ", "  ")
	fmt.Printf("  CDI spec %s:\n  %s\n", specPath, out)

	if wait {
		fmt.Printf("\nThe cluster keeps running until Ctrl-C:\n  export KUBECONFIG=%s\n", c.Kubeconfig())
		<-ctx.Done()
	}
	return nil
}
