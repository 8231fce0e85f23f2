// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/kubelet"
)

// TestBluetoothMediaBus: the media bus is one exclusive device (a second
// sound server's claim waits until the first is gone), and the CDI spec
// prepared for it stays valid across a restart of the bus: dbus-daemon
// unlinks its socket and creates a new one, the operator exits and
// starts again as the kubelet restarts it, and a client inside a mount
// made exactly as the container runtime makes it from the spec reaches
// the new daemon through the same mount, with the spec file unchanged.
// The control: a mount of the socket file itself, which the spec never
// makes, reaches nothing after the restart.
func TestBluetoothMediaBus(t *testing.T) {
	ctx, cluster := startBluetoothCluster(t, "deploy/audio/deviceclasses.yaml")
	client := cluster.Client()

	dir := t.TempDir()
	// A sysfs with no HID device: the bus is the only thing published.
	sim, start := mediaBusNode(t, ctx, cluster, dir)
	draOpts := bluetoothDRA(dir)
	op := start()

	media := bluetooth.MediaBusName(mustAddr(t, adapterAddr))
	waitForDriverSlice(t, ctx, cluster, bluetooth.DriverName, func(s *resourceapi.ResourceSlice) bool { return hasDevice(s, media) })

	// Two sound servers' claims, each the audio pod's own: every device
	// of the sound-card class, here narrowed to this driver's.
	busClaim := func(name string) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name: "bus", Exactly: &resourceapi.ExactDeviceRequest{
					DeviceClassName: "sound-card", AllocationMode: resourceapi.DeviceAllocationModeAll,
					Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
						Expression: `device.driver == "` + bluetooth.DriverName + `"`}}},
				},
			}}}},
		}
	}
	first := createWithPod(t, ctx, cluster, busClaim("sound-a"), "sound-a")
	if r := first.Status.Allocation.Devices.Results; len(r) != 1 || r[0].Device != media {
		t.Fatalf("the first claim got %+v, want the media bus %s alone", r, media)
	}
	must(t, ignore(client.ResourceV1().ResourceClaims("default").Create(ctx, busClaim("sound-b"), metav1.CreateOptions{})))
	must(t, ignore(client.CoreV1().Pods("default").Create(ctx, podFor(busClaim("sound-b"), "sound-b"), metav1.CreateOptions{})))
	pod, err := cluster.WaitForPodUnschedulable(ctx, "default", "sound-b")
	must(t, err)
	t.Logf("second claimant: %s", harness.PodCondition(pod, corev1.PodScheduled).Message)
	if c, err := client.ResourceV1().ResourceClaims("default").Get(ctx, "sound-b", metav1.GetOptions{}); err != nil || c.Status.Allocation != nil {
		t.Fatalf("the second claim was allocated beside the first (%v): the media bus is not exclusive", err)
	}

	kl := kubelet.New(client, draOpts.RegistrarDir)
	t.Cleanup(func() { kl.Close() })
	plugin, err := kl.Discover(ctx, bluetooth.DriverName)
	must(t, err)
	dev := prepareOK(t, ctx, plugin, first)
	specPath := filepath.Join(draOpts.CDIDir, bluetooth.DriverName+"-"+string(first.UID)+".json")
	specBefore, err := os.ReadFile(specPath)
	must(t, err)
	mount, env := runtimeEdits(t, draOpts.CDIDir, dev.CdiDeviceIds[0])
	if mount.Source != bluetooth.BusDir || mount.Destination != bluetooth.BusDir {
		t.Fatalf("the spec mounts %s at %s, want the bus directory %s", mount.Source, mount.Destination, bluetooth.BusDir)
	}
	if env != bluetooth.BusAddress {
		t.Fatalf("DBUS_SYSTEM_BUS_ADDRESS %q, want %q", env, bluetooth.BusAddress)
	}

	// A container made from the spec, the host's bus directory standing
	// for the bluetoothd pod's hostPath volume.
	ctr := startContainer(t, filepath.Dir(sim.SocketPath()), mount, env)
	idBefore := ctr.busID(t, "spec")
	controlBefore := ctr.busID(t, "file")
	if idBefore == "" || controlBefore != idBefore {
		t.Fatalf("before the restart: through the spec's mount %q, through a file mount %q; want the same bus", idBefore, controlBefore)
	}

	// The bus restarts: the socket is unlinked and made again; the
	// operator loses its connection and exits, and starts again.
	must(t, sim.RestartBus(ctx))
	select {
	case <-op.Exited():
		t.Logf("the operator exited on the bus restart: %v", op.Err())
	case <-time.After(30 * time.Second):
		t.Fatal("the operator did not exit within 30 s of its bus going")
	}
	start()
	waitForDriverSlice(t, ctx, cluster, bluetooth.DriverName, func(s *resourceapi.ResourceSlice) bool {
		for _, d := range s.Spec.Devices {
			if d.Name == media && len(d.Taints) == 0 {
				return true
			}
		}
		return false
	})
	idAfter := ctr.busID(t, "spec")
	if idAfter == "" || idAfter == idBefore {
		t.Fatalf("after the restart the spec's mount reaches bus %q (before: %q): want the new bus", idAfter, idBefore)
	}
	if got := ctr.busID(t, "file"); got != "" {
		t.Fatalf("the control reached bus %q through a mount of the old socket file: the check cannot fail", got)
	}
	specAfter, err := os.ReadFile(specPath)
	must(t, err)
	if string(specAfter) != string(specBefore) {
		t.Fatalf("the prepared spec changed across the restart:\n%s\n->\n%s", specBefore, specAfter)
	}
	// The restarted operator still holds the claim as prepared: preparing
	// it again gives the same device.
	if again := prepareOK(t, ctx, plugin, first); again.CdiDeviceIds[0] != dev.CdiDeviceIds[0] {
		t.Fatalf("prepared again as %v, was %v", again.CdiDeviceIds, dev.CdiDeviceIds)
	}
	// The kubelet restarts: a new one registers the plugin again from its
	// socket, and the claim is still prepared as it was.
	must(t, kl.Close())
	kl2 := kubelet.New(client, draOpts.RegistrarDir)
	t.Cleanup(func() { kl2.Close() })
	plugin2, err := kl2.Discover(ctx, bluetooth.DriverName)
	must(t, err)
	if again := prepareOK(t, ctx, plugin2, first); again.CdiDeviceIds[0] != dev.CdiDeviceIds[0] {
		t.Fatalf("after the kubelet's restart prepared as %v, was %v", again.CdiDeviceIds, dev.CdiDeviceIds)
	}
	if spec, err := os.ReadFile(specPath); err != nil || string(spec) != string(specBefore) {
		t.Fatalf("the prepared spec after the kubelet's restart: %v\n%s", err, spec)
	}

	// The first sound server goes: the second gets the bus.
	must(t, client.CoreV1().Pods("default").Delete(ctx, "sound-a", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
	must(t, client.ResourceV1().ResourceClaims("default").Delete(ctx, "sound-a", metav1.DeleteOptions{}))
	second, err := cluster.WaitForClaimAllocated(ctx, "default", "sound-b")
	must(t, err)
	if r := second.Status.Allocation.Devices.Results; len(r) != 1 || r[0].Device != media {
		t.Fatalf("the second claim got %+v, want the media bus", r)
	}
}

// runtimeEdits applies the CDI device id from the specs in dir to an
// empty OCI spec with the CDI library, as containerd does, and returns
// the one mount and the DBUS_SYSTEM_BUS_ADDRESS it adds.
func runtimeEdits(t *testing.T, dir, id string) (mount ociMount, env string) {
	t.Helper()
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	must(t, err)
	if errs := cache.GetErrors(); len(errs) > 0 {
		t.Fatalf("CDI specs: %v", errs)
	}
	spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	if _, err := cache.InjectDevices(spec, id); err != nil {
		t.Fatalf("inject %s: %v", id, err)
	}
	if len(spec.Mounts) != 1 || len(spec.Linux.Devices) != 0 {
		t.Fatalf("media bus injected mounts %+v, devices %+v: want one mount and no device node", spec.Mounts, spec.Linux.Devices)
	}
	m := spec.Mounts[0]
	for _, e := range spec.Process.Env {
		if v, ok := strings.CutPrefix(e, "DBUS_SYSTEM_BUS_ADDRESS="); ok {
			env = v
		}
	}
	return ociMount{Source: m.Source, Destination: m.Destination, Options: m.Options}, env
}

// ociMount is the mount a runtime makes from a CDI mount.
type ociMount struct {
	Source, Destination string
	Options             []string
}

// container is a shell in a private mount namespace holding the mounts a
// runtime would make: the host's bus directory (busDir bound at the
// spec's host path, in a tmpfs over /run so the host is untouched), the
// spec's mount into a root directory with the spec's options, and, as a
// control, a bind mount of the socket file itself. It answers a "spec"
// or "file" line with "id=" and the id of the bus reached through that
// mount (GetId), empty when nothing answers.
type container struct {
	in  io.WriteCloser
	out *bufio.Reader
}

func startContainer(t *testing.T, busDir string, m ociMount, address string) *container {
	t.Helper()
	socket, ok := strings.CutPrefix(address, "unix:path=")
	if !ok || !strings.HasPrefix(socket, m.Destination+"/") {
		t.Fatalf("address %q does not name a socket in the mount %s", address, m.Destination)
	}
	root := t.TempDir()
	// The runtime's way (runc): a recursive bind, then a remount that
	// applies the flags, then the propagation.
	var flags []string
	for _, o := range m.Options {
		switch o {
		case "rbind", "bind", "rprivate", "private":
		default:
			flags = append(flags, o)
		}
	}
	script := fmt.Sprintf(`set -e
mount -t tmpfs tmpfs /run
mkdir -p %[1]q %[2]q %[3]q
mount --bind %[4]q %[1]q
mount --rbind %[1]q %[2]q
mount -o remount,bind,%[5]s %[2]q
mount --make-rprivate %[2]q
touch %[3]q/socket
mount --bind %[1]q/system_bus_socket %[3]q/socket
echo ready
while read what; do
  case "$what" in
  spec) sock=%[6]q ;;
  file) sock=%[3]q/socket ;;
  esac
  id=$(timeout 10 dbus-send --bus="unix:path=$sock" --print-reply=literal --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.GetId 2>/dev/null | tr -d ' \n' || true)
  echo "id=$id"
done
`, m.Source, root+m.Destination, root+"/control", busDir, strings.Join(flags, ","), root+socket)
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	in, err := cmd.StdinPipe()
	must(t, err)
	outPipe, err := cmd.StdoutPipe()
	must(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	c := &container{in: in, out: bufio.NewReader(outPipe)}
	line, err := c.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		cmd.Wait()
		t.Fatalf("mount namespace: %q, %v\n%s", line, err, stderr.String())
	}
	return c
}

// busID asks through "spec" or "file" for the id of the bus reached; ""
// when nothing answers.
func (c *container) busID(t *testing.T, through string) string {
	t.Helper()
	if _, err := fmt.Fprintln(c.in, through); err != nil {
		t.Fatal(err)
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatalf("container shell: %v", err)
	}
	id, ok := strings.CutPrefix(strings.TrimSpace(line), "id=")
	if !ok {
		t.Fatalf("container shell said %q", line)
	}
	return id
}
