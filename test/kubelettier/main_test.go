// SPDX-License-Identifier: Apache-2.0

//go:build kubelettier

package kubelettier

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/fakesys"
	"github.com/liken-sh/operators/test/node"
)

// The tier's one cluster and node, set up by TestMain.
var (
	cluster  *harness.Cluster
	theNode  *node.Node
	root     string
	workDir  string
	imageDir string
	overlays Overlays
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000 ")+format+"\n", args...)
}

func run(m *testing.M) (code int) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var err error
	if root, err = harness.ModuleRoot(); err != nil {
		logf("%v", err)
		return 1
	}
	if workDir, err = os.MkdirTemp("", "liken-tier-"); err != nil {
		logf("%v", err)
		return 1
	}
	keep := false
	defer func() {
		if code != 0 || keep {
			logf("kubelet tier: work directory kept: %s (kubelet.log, containerd.log, pod-logs/, cluster/)", workDir)
		} else {
			os.RemoveAll(workDir)
		}
	}()

	if cluster, err = harness.Start(ctx, harness.Options{Dir: filepath.Join(workDir, "cluster"), Logf: logf}); err != nil {
		logf("kubelet tier: control plane: %v", err)
		return 1
	}
	defer cluster.Stop()

	// Images first, before anything on the host changes.
	imageDir = os.Getenv("LIKEN_IMAGES")
	if imageDir == "" {
		imageDir = filepath.Join(root, "_output", "images")
	}
	var tars []string
	for _, name := range []string{"liken-inventory", "audio-operator", "bluetoothd", "bluetooth-operator", "bluetooth-bondfetch"} {
		tars = append(tars, filepath.Join(imageDir, name+".tar"))
	}
	t0 := time.Now()
	tier, err := BuildTierImages(ctx, root, filepath.Join(workDir, "images"))
	if err != nil {
		logf("kubelet tier: images: %v", err)
		return 1
	}
	logf("kubelet tier: tier images built in %s", time.Since(t0).Round(time.Millisecond))
	tars = append(tars, tier...)

	if theNode, err = node.Start(ctx, cluster, node.Options{Dir: filepath.Join(workDir, "node"), Logf: logf}); err != nil {
		logf("kubelet tier: %v", err)
		return 1
	}
	defer func() {
		if err := theNode.Stop(); err != nil {
			logf("kubelet tier: CLEANLINESS FAILED: %v", err)
			code = 1
			return
		}
		logf("kubelet tier: host restored: sysctls, iptables, mounts, cgroups, links, directories and device nodes as before, no process left")
	}()
	t0 = time.Now()
	if err := theNode.Import(ctx, tars...); err != nil {
		logf("kubelet tier: import: %v", err)
		return 1
	}
	logf("kubelet tier: %d images imported in %s", len(tars), time.Since(t0).Round(time.Millisecond))

	if err := hostDevices(); err != nil {
		logf("kubelet tier: %v", err)
		return 1
	}
	if overlays, err = WriteOverlays(root, filepath.Join(workDir, "overlay"), cluster.APIServerPort()); err != nil {
		logf("kubelet tier: %v", err)
		return 1
	}
	logf("kubelet tier: ready to test in %s", time.Since(began).Round(time.Millisecond))
	code = m.Run()
	// A failed run leaves the pods' logs for reading.
	keep = code != 0
	return code
}

// hostDevices creates the stand-in device nodes of the recorded hardware
// on the host: the desktop adapter's usbfs node, which the inventory
// driver delivers with the host's mode and owner, and the gamepad's evdev
// node, which the Bluetooth operator delivers to its consumer. Each takes
// the first number whose node the host lacks (a node there may be a real
// device, and is never used or changed), from the recorded one on: the
// adapter's device number on bus 1 (test/fakesys/desktop.tree, renumbered
// to match) and the gamepad's evdev number within evdev's legacy minors
// (drivers/input/evdev.c, EVDEV_MINORS). The node records each node and
// directory it makes and removes them when it stops, or the next run does
// after a killed one.
func hostDevices() error {
	var err error
	if adapterDevnum, err = FreeNumber("/dev/bus/usb/001/%03d", fakesys.DesktopAdapterDevnum, 127); err != nil {
		return err
	}
	if padEvent, err = FreeNumber("/dev/input/event%d", 5, 31); err != nil {
		return err
	}
	padEventNode = fmt.Sprintf("/dev/input/event%d", padEvent)
	usbNode := fmt.Sprintf("/dev/bus/usb/001/%03d", adapterDevnum)
	// usbfs minors: (bus-1)*128 + devnum-1 (drivers/usb/core/hub.c).
	if err := theNode.CreateCharDevice(usbNode, 189, uint32(adapterDevnum-1)); err != nil {
		return err
	}
	if err := theNode.CreateCharDevice(padEventNode, 13, uint32(64+padEvent)); err != nil {
		return err
	}
	logf("kubelet tier: stand-in device nodes %s and %s", usbNode, padEventNode)
	return nil
}

// kubectl runs the control plane's kubectl against the tier's cluster.
func kubectl(t testing.TB, ctx context.Context, args ...string) string {
	t.Helper()
	out, err := cluster.Kubectl(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}
