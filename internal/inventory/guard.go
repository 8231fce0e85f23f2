// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// DriverName is the DRA driver name this driver shares with liken's own.
const DriverName = "liken.sh"

// CDIClass is the CDI class of this driver's devices: IDs are
// liken.sh/device=<claim UID>-<device>.
const CDIClass = "device"

// ErrNotAlone is wrapped by CheckAlone's error.
var ErrNotAlone = fmt.Errorf("another %s driver serves this node", DriverName)

// CheckAlone returns an error wrapping ErrNotAlone when another liken.sh
// driver already serves node: a registration socket of that driver name in
// registrarDir that accepts a connection (a live kubelet plugin: liken's
// own, or a second copy of this one), or a ResourceSlice of the driver for
// node that this driver's slice controller did not name. Publishing beside
// it would take its pool over: the driver core reconciles every slice of
// its driver on its node. A slice of this driver's own naming with no live
// socket is a predecessor's, which the new instance adopts.
func CheckAlone(ctx context.Context, client kubernetes.Interface, node, registrarDir string) error {
	for _, pattern := range []string{DriverName + "-reg.sock", DriverName + "-*-reg.sock"} {
		socks, _ := filepath.Glob(filepath.Join(registrarDir, pattern))
		for _, sock := range socks {
			conn, err := net.DialTimeout("unix", sock, time.Second)
			if err == nil {
				conn.Close()
				return fmt.Errorf("%w: the kubelet plugin socket %s answers; this node's liken.sh devices are published already (liken's own OS?), so this driver is not needed here", ErrNotAlone, sock)
			}
		}
	}
	list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("spec.driver", DriverName),
			fields.OneTermEqualSelector("spec.nodeName", node)).String(),
	})
	if err != nil {
		return fmt.Errorf("listing the %s ResourceSlices of node %s: %w", DriverName, node, err)
	}
	ours := ownSliceName(node)
	for _, s := range list.Items {
		if !ours.MatchString(s.Name) {
			return fmt.Errorf("%w: the ResourceSlice %s publishes this node's liken.sh devices and was not written by this driver (liken's own OS?), so this driver is not needed here", ErrNotAlone, s.Name)
		}
	}
	return nil
}

// ownSliceName matches the names the slice controller of
// k8s.io/dynamic-resource-allocation/resourceslice generates for this
// driver's pool on node: "<index in hex>-liken.sh-<node>-<suffix>", and
// the older "<node>-liken.sh-<suffix>".
func ownSliceName(node string) *regexp.Regexp {
	d, n := regexp.QuoteMeta(DriverName), regexp.QuoteMeta(node)
	return regexp.MustCompile(`^(?:[0-9a-f]+-` + d + `-` + n + `|` + n + `-` + d + `)-[a-z0-9]+$`)
}
