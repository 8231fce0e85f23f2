// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"log"
	"path/filepath"
	"time"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/inventory"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/kubelet"
	"github.com/liken-sh/operators/test/fakesys"
)

// inventoryDemo runs the liken.sh inventory driver over the desktop's
// sysfs (fakesys.Desktop) until the returned function is called, and
// waits for its slice: the raw hardware the two operators' DaemonSets
// claim, as on a cluster without liken.
func inventoryDemo(ctx context.Context, c *harness.Cluster, node, root string) (func(), error) {
	desk, err := fakesys.LayOutDesktop(filepath.Join(root, "desktop"))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- inventory.Run(ctx, inventory.Config{
			NodeName: node, KubeClient: c.Client(), SysRoot: desk.Sys, DevRoot: desk.Dev,
			DRA: dra.Options{
				RegistrarDir: filepath.Join(root, "plugins_registry"),
				PluginDir:    filepath.Join(root, "plugins", inventory.DriverName),
				CDIDir:       filepath.Join(root, "cdi"),
				SettleQuiet:  300 * time.Millisecond,
			},
		})
	}()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			log.Printf("inventory driver: %v", err)
		}
	}
	err = waitForSlice(ctx, c, inventory.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return len(s.Spec.Devices) > 0
	})
	if err != nil {
		select {
		case runErr := <-done:
			cancel()
			return nil, errors.Join(err, runErr)
		default:
		}
		stop()
		return nil, err
	}
	// The kubelet's part: acknowledge the driver's registration, as the
	// operators' drivers are when their claims are prepared, so that its
	// registration watchdog has nothing to ask again about.
	kl := kubelet.New(c.Client(), filepath.Join(root, "plugins_registry"))
	defer kl.Close()
	if _, err := kl.Discover(ctx, inventory.DriverName); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}
