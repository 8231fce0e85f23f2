// SPDX-License-Identifier: Apache-2.0

// Command local-cluster runs the e2e harness's control plane by hand: one
// simulated node with liken.sh's devices and the operators' DeviceClasses,
// until SIGINT or SIGTERM. hack/local-cluster.sh builds the binaries and
// runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/liken-sh/operators/test/e2e/harness"
)

func main() {
	nodeName := flag.String("node", "node-1", "name of the simulated node")
	dir := flag.String("dir", "", "work directory (default: a temporary directory, removed on exit)")
	binDir := flag.String("bin", "", "directory of the control-plane binaries (default: $"+harness.EnvBinDir+", else hack/build-control-plane.sh)")
	flag.Parse()
	log.SetFlags(log.Ltime)
	if err := run(*nodeName, *dir, *binDir); err != nil {
		log.Fatal(err)
	}
}

func run(nodeName, dir, binDir string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := harness.Start(ctx, harness.Options{Dir: dir, BinDir: binDir, Logf: log.Printf})
	if err != nil {
		return err
	}
	defer func() {
		log.Print("stopping")
		c.Stop()
	}()
	if err := c.AddLikenNode(ctx, nodeName); err != nil {
		return err
	}
	log.Printf("node %s has %s and %s (driver %s)", nodeName, harness.BluetoothAdapterDevice, harness.SoundControllerDevice, harness.LikenDriver)
	fmt.Printf("kubeconfig: %s\nexport KUBECONFIG=%s\n", c.Kubeconfig(), c.Kubeconfig())
	<-ctx.Done()
	return nil
}
