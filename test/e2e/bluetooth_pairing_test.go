// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"github.com/liken-sh/operators/test/child"
	"github.com/liken-sh/operators/test/poll"
	"io"
	"maps"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bluetooth"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/fakesys"
)

// plugin runs kubectl-liken-bluetooth as a person would, with their
// kubeconfig and impersonation flags.
type plugin struct {
	bin, kubeconfig string
	as              []string
}

func (p plugin) command(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, p.bin, append(append([]string{"--kubeconfig", p.kubeconfig}, p.as...), args...)...)
}

// TestPairingThroughThePlugin: a person bound to bluetooth-pairing (and
// bluetooth-viewer) pairs a gamepad by picking it from the plugin's
// table and a keyboard by typing the passkey it shows, with nothing but
// the plugin; the operator serves only the adapter it claimed; the bonds
// reach Secrets owned by their Peripherals; `list` shows them; `unpair`
// removes the bond and garbage collection its Secret.
func TestPairingThroughThePlugin(t *testing.T) {
	ctx, cluster := startBluetoothCluster(t)
	client := cluster.Client()
	must(t, cluster.ApplyCRDs(ctx, "deploy/bluetooth/crds"))
	must(t, ignore(client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "alice"}}, metav1.CreateOptions{})))
	for _, args := range [][]string{
		{"apply", "-f", "deploy/bluetooth/pairing-roles.yaml"},
		{"create", "rolebinding", "alice-pairs", "-n", "alice", "--clusterrole=bluetooth-pairing", "--user=alice"},
		{"create", "clusterrolebinding", "alice-views", "--clusterrole=bluetooth-viewer", "--user=alice"},
	} {
		if out, err := cluster.Kubectl(ctx, args...); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	dyn, err := dynamic.NewForConfig(cluster.RESTConfig())
	must(t, err)

	dir := t.TempDir()
	sim := bluezsim.New(t, bluezsim.Options{StorageDir: filepath.Join(dir, "bluetooth")})
	must(t, ignore(sim.AddAdapter("hci0", adapterAddr)))
	// Another adapter on the node, with a bond of its own: left alone.
	const otherAdapter, otherPad = "00:1A:7D:DA:71:99", "E4:17:D8:C5:67:99"
	must(t, ignore(sim.AddAdapter("hci1", otherAdapter)))
	must(t, ignore(sim.AddDevice("hci1", otherPad, bluezsim.Device{Name: "Not ours", Class: 0x002508, UUIDs: []string{hidUUID}})))
	must(t, sim.Pair("hci1", otherPad))

	// The gamepad's HID device, as the kernel registers it once connected.
	const gamepad = "E4:17:D8:C5:67:6D"
	must(t, ignore(fakesys.BluetoothHID(filepath.Join(dir, "sys"), "0005:2DC8:3820.0001", "8Bitdo NES30 Pro", gamepad, adapterAddr, 7)))

	runBluetoothOperator(t, ctx, cluster, bluetooth.Config{
		Dynamic: dyn, Adapter: mustAddr(t, adapterAddr),
		Bus: bluez.Options{Address: sim.Address()}, BondsRoot: sim.StorageDir(),
		SysRoot: filepath.Join(dir, "sys"), DRA: bluetoothDRA(dir), BondSettle: 300 * time.Millisecond,
	})

	alice := plugin{bin: child.BuildCommand(t, "github.com/liken-sh/operators/cmd/kubectl-liken-bluetooth"), kubeconfig: cluster.Kubeconfig(), as: []string{"--as=alice", "-n", "alice"}}
	admin := plugin{bin: alice.bin, kubeconfig: cluster.Kubeconfig()}
	adapterKey := mustAddr(t, adapterAddr).Key()
	poll.WaitFor(t, ctx, "the Adapter", 30*time.Second, func() (bool, string) {
		_, err := dyn.Resource(btv1.AdaptersResource).Get(ctx, adapterKey, metav1.GetOptions{})
		return err == nil, errString(err)
	})

	// The gamepad, picked from the table.
	must(t, ignore(sim.AddDevice("hci0", gamepad, bluezsim.Device{Name: "8Bitdo NES30 Pro", Class: 0x002508, UUIDs: []string{hidUUID}, RSSI: -48})))
	out := converse(t, ctx, alice.command(ctx, "pair", "--window", "60s"), func(line string, stdin io.Writer) {
		if strings.HasPrefix(line, "Type the number or address") {
			fmt.Fprintln(stdin, "1")
		}
	})
	if !strings.Contains(out, "8Bitdo NES30 Pro") || !strings.Contains(out, "Paired: peripheral e4-17-d8-c5-67-6d") {
		t.Errorf("pair output:\n%s", out)
	}

	// The keyboard, with the passkey it shows typed on it.
	const keyboard = "C0:FF:EE:00:00:01"
	must(t, ignore(sim.AddDevice("hci0", keyboard, bluezsim.Device{Name: "Keyboard", Class: 0x002540, UUIDs: []string{hidUUID}, Pairing: bluezsim.DisplayPasskey})))
	typeRE := regexp.MustCompile(`^Type ([0-9]{6}) on the device`)
	out = converse(t, ctx, alice.command(ctx, "pair", "--device", strings.ToLower(keyboard)), func(line string, _ io.Writer) {
		if m := typeRE.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			must(t, sim.EnterPasskey("hci0", keyboard, uint32(n)))
		}
	})
	if !strings.Contains(out, "Paired: peripheral c0-ff-ee-00-00-01") {
		t.Errorf("pair output:\n%s", out)
	}

	// A wrong passkey fails visibly, with exit status 1.
	const keyboard2 = "C0:FF:EE:00:00:02"
	must(t, ignore(sim.AddDevice("hci0", keyboard2, bluezsim.Device{Name: "Keyboard 2", Class: 0x002540, UUIDs: []string{hidUUID}, Pairing: bluezsim.DisplayPasskey})))
	cmd := alice.command(ctx, "pair", "--device", keyboard2)
	out, err = converseErr(ctx, cmd, func(line string, _ io.Writer) {
		if m := typeRE.FindStringSubmatch(line); m != nil {
			must(t, sim.EnterPasskey("hci0", keyboard2, 999999))
		}
	})
	if err == nil || !strings.Contains(out, "AuthenticationFailed") {
		t.Errorf("a wrong passkey: %v\n%s", err, out)
	}

	// The bonds are in Secrets owned by their Peripherals; hci1's is not.
	for _, dev := range []string{gamepad, keyboard} {
		waitForBondSecret(t, ctx, cluster, sim.StorageDir(), dev)
		s, err := client.CoreV1().Secrets("liken-system").Get(ctx, bonds.SecretName(mustAddr(t, adapterAddr), mustAddr(t, dev)), metav1.GetOptions{})
		must(t, err)
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Peripheral" || s.OwnerReferences[0].Name != mustAddr(t, dev).Key() {
			t.Errorf("Secret %s owners %+v", s.Name, s.OwnerReferences)
		}
	}
	if _, err := client.CoreV1().Secrets("liken-system").Get(ctx, bonds.SecretName(mustAddr(t, otherAdapter), mustAddr(t, otherPad)), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the other adapter's bond was written back: %v", err)
	}

	// A bond Secret deleted by hand while BlueZ holds the bond is written
	// again, with its owner, without waiting for the bonds to change.
	keyboardSecret := bonds.SecretName(mustAddr(t, adapterAddr), mustAddr(t, keyboard))
	must(t, client.CoreV1().Secrets("liken-system").Delete(ctx, keyboardSecret, metav1.DeleteOptions{}))
	poll.WaitFor(t, ctx, "the deleted bond Secret written again", 30*time.Second, func() (bool, string) {
		s, err := client.CoreV1().Secrets("liken-system").Get(ctx, keyboardSecret, metav1.GetOptions{})
		if err != nil {
			return false, errString(err)
		}
		return len(s.Data) > 0 && len(s.OwnerReferences) == 1, fmt.Sprintf("%d keys, owners %v", len(s.Data), s.OwnerReferences)
	})

	// A bond Secret whose info is corrupted by hand while BlueZ holds the
	// bond gets BlueZ's bond back at once, with an Event saying so; one
	// of a bond BlueZ does not hold is left as it is, and reported.
	edit := func(name string, data map[string][]byte) {
		t.Helper()
		s, err := client.CoreV1().Secrets("liken-system").Get(ctx, name, metav1.GetOptions{})
		must(t, err)
		maps.Copy(s.Data, data)
		must(t, ignore(client.CoreV1().Secrets("liken-system").Update(ctx, s, metav1.UpdateOptions{})))
	}
	edit(keyboardSecret, map[string][]byte{bonds.InfoKey(mustAddr(t, keyboard)): []byte("garbage")})
	waitForBondSecret(t, ctx, cluster, sim.StorageDir(), keyboard)
	waitForSecretEvent(t, ctx, cluster, keyboardSecret, bluetooth.ReasonBondSecretRepaired)
	stranger := bonds.Bond{Adapter: mustAddr(t, adapterAddr), Device: mustAddr(t, "C0:FF:EE:00:00:09"), Info: []byte("planted")}
	must(t, ignore(client.CoreV1().Secrets("liken-system").Create(ctx, bonds.EncodeSecret("liken-system", stranger), metav1.CreateOptions{})))
	strangerSecret := bonds.SecretName(stranger.Adapter, stranger.Device)
	edit(strangerSecret, map[string][]byte{bonds.InfoKey(stranger.Device): []byte("garbage")})
	waitForSecretEvent(t, ctx, cluster, strangerSecret, bluetooth.ReasonBondSecretLeftAlone)
	if s, err := client.CoreV1().Secrets("liken-system").Get(ctx, strangerSecret, metav1.GetOptions{}); err != nil || string(s.Data[bonds.InfoKey(stranger.Device)]) != "garbage" {
		t.Errorf("the Secret of a bond BlueZ does not hold was changed: %v", err)
	}
	if _, err := sim.DeviceProperty("hci0", "C0:FF:EE:00:00:09", "Paired"); err == nil {
		t.Errorf("a bond Secret made a device appear in BlueZ")
	}
	must(t, client.CoreV1().Secrets("liken-system").Delete(ctx, strangerSecret, metav1.DeleteOptions{}))

	// A claim whose allocation holds the gamepad, before any pod has
	// it prepared: list names it. alice may not list every namespace's
	// claims, so her list says what CLAIMED BY then shows.
	padClaim, err := client.ResourceV1().ResourceClaims("alice").Create(ctx, &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "pad"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "pad", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "bluetooth-input"}}}}},
	}, metav1.CreateOptions{})
	must(t, err)
	padClaim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: "pad", Driver: bluetooth.DriverName, Pool: node, Device: "e4-17-d8-c5-67-6d"}}}}
	_, err = client.ResourceV1().ResourceClaims("alice").UpdateStatus(ctx, padClaim, metav1.UpdateOptions{})
	must(t, err)
	held, err := admin.command(ctx, "list").CombinedOutput()
	must(t, err)
	if !regexp.MustCompile(`(?m)^e4-17-d8-c5-67-6d .* alice/pad$`).Match(held) {
		t.Errorf("admin's list does not show alice/pad holding the gamepad:\n%s", held)
	}
	t.Logf("kubectl liken bluetooth list (admin):\n%s", held)
	must(t, client.ResourceV1().ResourceClaims("alice").Delete(ctx, "pad", metav1.DeleteOptions{}))

	listed, err := alice.command(ctx, "list").CombinedOutput()
	must(t, err)
	if !strings.Contains(string(listed), "CLAIMED BY shows only the claims prepared on a node: listing ResourceClaims was refused") {
		t.Errorf("alice's list does not say why CLAIMED BY shows only prepared claims:\n%s", listed)
	}
	for _, want := range []string{adapterKey, "e4-17-d8-c5-67-6d", "c0-ff-ee-00-00-01", "8Bitdo NES30 Pro"} {
		if !strings.Contains(string(listed), want) {
			t.Errorf("list lacks %q:\n%s", want, listed)
		}
	}
	if strings.Contains(string(listed), "e4-17-d8-c5-67-99") || strings.Contains(string(listed), "00-1a-7d-da-71-99") {
		t.Errorf("list shows the adapter the operator did not claim:\n%s", listed)
	}
	t.Logf("kubectl liken bluetooth list:\n%s", listed)

	// A request for an adapter that does not exist is refused by name,
	// and the plugin leaves no request behind waiting for it.
	refused, err := alice.command(ctx, "pair", "--adapter", "11:22:33:44:55:66").CombinedOutput()
	if err == nil || !strings.Contains(string(refused), "AdapterNotFound") || !strings.Contains(string(refused), "the request was deleted") ||
		strings.Contains(string(refused), "discoverable now") {
		t.Errorf("pair with an unknown adapter: %v\n%s", err, refused)
	}
	left, err := dyn.Resource(btv1.PairingRequestsResource).Namespace("alice").List(ctx, metav1.ListOptions{})
	must(t, err)
	for _, r := range left.Items {
		if spec, _, _ := unstructured.NestedString(r.Object, "spec", "adapter"); spec == "11-22-33-44-55-66" {
			t.Errorf("the refused request %s is still there", r.GetName())
		}
	}

	// The gamepad is paired: pair --device refuses it, naming its bond and
	// how to pair it anew, and --adapter with --node is checked against
	// the adapter's node; neither opens a window.
	poll.WaitFor(t, ctx, "the gamepad's bond held", 30*time.Second, func() (bool, string) {
		u, err := dyn.Resource(btv1.PeripheralsResource).Get(ctx, "e4-17-d8-c5-67-6d", metav1.GetOptions{})
		if err != nil {
			return false, errString(err)
		}
		held, _, _ := unstructured.NestedBool(u.Object, "status", "bond", "held")
		return held, fmt.Sprint(u.Object["status"])
	})
	before, err := dyn.Resource(btv1.PairingRequestsResource).Namespace("alice").List(ctx, metav1.ListOptions{})
	must(t, err)
	again, err := alice.command(ctx, "pair", "--device", gamepad).CombinedOutput()
	if err == nil || !strings.Contains(string(again), gamepad+" is already paired with adapter "+adapterKey+" on node "+node) ||
		!strings.Contains(string(again), "kubectl liken bluetooth unpair e4-17-d8-c5-67-6d") {
		t.Errorf("pair --device of the paired gamepad: %v\n%s", err, again)
	}
	elsewhere, err := alice.command(ctx, "pair", "--adapter", adapterAddr, "--node", "elsewhere").CombinedOutput()
	if err == nil || !strings.Contains(string(elsewhere), "--adapter "+adapterKey+" is on node "+node+`, not on --node "elsewhere"`) {
		t.Errorf("pair --adapter with another --node: %v\n%s", err, elsewhere)
	}
	after, err := dyn.Resource(btv1.PairingRequestsResource).Namespace("alice").List(ctx, metav1.ListOptions{})
	must(t, err)
	if len(after.Items) != len(before.Items) {
		t.Errorf("the refused pairs left %d PairingRequests, were %d", len(after.Items), len(before.Items))
	}

	// alice may not unpair; the admin may, and the Secret goes.
	if out, err := alice.command(ctx, "unpair", "e4-17-d8-c5-67-6d").CombinedOutput(); err == nil {
		t.Errorf("alice unpaired:\n%s", out)
	}
	if out, err := admin.command(ctx, "unpair", "e4-17-d8-c5-67-6d", "--timeout", "60s").CombinedOutput(); err != nil {
		t.Fatalf("unpair: %v\n%s", err, out)
	}
	// The garbage collector learns of a new CRD's resource at its next
	// discovery resync (every 30 s in kube-controller-manager), so this
	// may take a while on a fresh cluster.
	poll.WaitFor(t, ctx, "the gamepad's bond Secret collected", 120*time.Second, func() (bool, string) {
		_, err := client.CoreV1().Secrets("liken-system").Get(ctx, bonds.SecretName(mustAddr(t, adapterAddr), mustAddr(t, gamepad)), metav1.GetOptions{})
		return apierrors.IsNotFound(err), errString(err)
	})
	if v, err := sim.DeviceProperty("hci0", gamepad, "Paired"); err == nil {
		t.Errorf("the gamepad is still in BlueZ after the unpair: Paired=%v", v)
	}

	// A deleted Adapter whose radio is present stays, Terminating, and
	// list says so with the operator's reason.
	must(t, dyn.Resource(btv1.AdaptersResource).Delete(ctx, adapterKey, metav1.DeleteOptions{}))
	var terminating []byte
	poll.WaitFor(t, ctx, "list showing the Adapter Terminating (DeletionRefused)", 30*time.Second, func() (bool, string) {
		terminating, err = admin.command(ctx, "list").CombinedOutput()
		return err == nil && regexp.MustCompile(`(?m)^`+adapterKey+` .* Terminating \(DeletionRefused\) `).Match(terminating) &&
			strings.Contains(string(terminating), "Adapter "+adapterKey+" is Terminating: the radio at"), string(terminating)
	})
}

// converse runs cmd, calls onLine with every line it prints (stdout and
// stderr), and requires it to exit 0 within 60 s; it returns the output.
func converse(t *testing.T, ctx context.Context, cmd *exec.Cmd, onLine func(line string, stdin io.Writer)) string {
	t.Helper()
	out, err := converseErr(ctx, cmd, onLine)
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return out
}

func converseErr(ctx context.Context, cmd *exec.Cmd, onLine func(line string, stdin io.Writer)) (string, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return "", err
	}
	var all strings.Builder
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			onLine(sc.Text(), stdin)
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	select {
	case err = <-done:
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		err = fmt.Errorf("no end within 90 s")
		<-done
	case <-ctx.Done():
		err = ctx.Err()
	}
	<-lines
	stdin.Close()
	return all.String(), err
}
