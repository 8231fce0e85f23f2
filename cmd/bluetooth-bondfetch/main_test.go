// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/liken-sh/operators/test/child"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/internal/hci"
	"github.com/liken-sh/operators/internal/hci/hcitest"
	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/fakesys"
	"github.com/liken-sh/operators/test/fixtures"
)

var (
	// The adapter the pod claimed (the recorded tree's Realtek, hci3 on
	// usbfs 001/005), an adapter on the same node it did not claim
	// (hci0), and the fixtures' devices.
	claimed   = bdaddr.MustParse("5C:F3:70:8B:1A:2E")
	unclaimed = bdaddr.MustParse("00:0C:E7:11:22:33")
	pad       = bdaddr.MustParse("E4:17:D8:C5:67:6D")
	mouse     = bdaddr.MustParse("F4:9A:2C:31:7D:05")
)

// One control plane for the package's tests; each test has its own
// namespace.
var shared = harness.Shared{Options: harness.Options{WithoutScheduler: true, WithoutControllerManager: true}}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

func apiServer(t testing.TB) *harness.Cluster { return shared.Get(t) }

// namespaceWithReader creates namespace ns and returns a client acting as
// the bondfetch ServiceAccount there, allowed to list Secrets in ns and
// nothing else: the permission the deploy base gives it.
func namespaceWithReader(t testing.TB, ctx context.Context, ns string) kubernetes.Interface {
	t.Helper()
	c := apiServer(t)
	admin := c.Client()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "bondfetch"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bondfetch"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "bondfetch"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "bondfetch", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client := serviceAccount(t, ns, "bondfetch")
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return client
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bondfetch role never took effect: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// serviceAccount returns a client acting as ServiceAccount ns/name.
func serviceAccount(t testing.TB, ns, name string) kubernetes.Interface {
	t.Helper()
	cfg := apiServer(t).RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + name}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// node is the pod's view of its node: the recorded sysfs tree with three
// adapters, the claimed Realtek's usbfs node in /dev, and a kernel whose
// Realtek reads zeros once before its address.
type node struct {
	sysfs, dev string
	kernel     *hcitest.Kernel
}

func newNode(t testing.TB) node {
	t.Helper()
	manifest, err := os.ReadFile(filepath.Join("..", "..", "internal", "hci", "testdata", "sysfs-three-adapters.txt"))
	if err != nil {
		t.Fatal(err)
	}
	n := node{sysfs: filepath.Join(t.TempDir(), "sys"), dev: filepath.Join(t.TempDir(), "dev"), kernel: newKernel()}
	if err := fakesys.BuildTree(manifest, n.sysfs); err != nil {
		t.Fatal(err)
	}
	if _, err := hcitest.ClaimNode(n.dev, 1, 5); err != nil {
		t.Fatal(err)
	}
	return n
}

// newKernel answers for the unclaimed hci0 and for the claimed hci3,
// which reads zeros once before its address.
func newKernel() *hcitest.Kernel {
	k := hcitest.NewKernel()
	k.Script(0, hcitest.Answer{Info: hci.DevInfo{ID: 0, Name: "hci0", Address: unclaimed, Flags: 1, Type: 1}})
	k.Script(3,
		hcitest.Answer{Info: hci.DevInfo{ID: 3, Name: "hci3", Type: 1}},
		hcitest.Answer{Info: hci.DevInfo{ID: 3, Name: "hci3", Address: claimed, Flags: 1, Type: 1}})
	return k
}

func (n node) world(client kubernetes.Interface) world {
	return world{
		openKernel: func() (hci.Kernel, func() error, error) { return n.kernel, func() error { return nil }, nil },
		newClient: func(kubeconfig, namespace string) (bonds.SecretLister, error) {
			if kubeconfig != "" {
				return nil, errors.New("tests pass the client")
			}
			return client.CoreV1().Secrets(namespace), nil
		},
		clock:    clock.RealClock{},
		interval: 10 * time.Millisecond,
	}
}

func (n node) args(root string, extra ...string) []string {
	return append([]string{"-root", root, "-sysfs", n.sysfs, "-dev", n.dev}, extra...)
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// snapshot maps every path under base to its mode and contents.
func snapshot(t *testing.T, base string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(base, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, path)
		v := info.Mode().String()
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			v += " " + string(b)
		} else if info.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(path)
			v += " -> " + target
		}
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func create(t testing.TB, ctx context.Context, s *corev1.Secret) {
	t.Helper()
	if _, err := apiServer(t).Client().CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret %s/%s: %v", s.Namespace, s.Name, err)
	}
}

// TestRestore runs bondfetch against a real API server holding the
// claimed adapter's two bonds, in this package's layout and the
// reference's, beside hostile and foreign Secrets, and checks the whole
// directory the volume sits in byte for byte.
func TestRestore(t *testing.T) {
	ctx := context.Background()
	const ns = "restore"
	client := namespaceWithReader(t, ctx, ns)
	label := map[string]string{bonds.AdapterLabel: claimed.Key()}
	padInfo, padCache, mouseInfo := fixtures.BlueZ(t, "8bitdo-nes30-pro.info"), fixtures.BlueZ(t, "8bitdo-nes30-pro.cache"), fixtures.BlueZ(t, "razer-basilisk-x-hyperspeed.info")

	// The pad, as the operator stores it.
	create(t, ctx, bonds.EncodeSecret(ns, bonds.Bond{Adapter: claimed, Device: pad, Info: padInfo, Cache: padCache}))
	// The mouse, as the reference stored it.
	create(t, ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bluetooth-bond-" + mouse.Key(), Namespace: ns, Labels: label},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{bonds.InfoKey(mouse): mouseInfo},
	})
	// Hostile: labelled with the claimed adapter, and holding everything
	// that must not reach the disk, including another copy of the pad.
	create(t, ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bluetooth-bond-evil", Namespace: ns, Labels: label},
		Data: map[string][]byte{
			"etc-passwd.info":         padInfo,
			"00-00-00-00-00-00.info":  padInfo,
			"ff-ff-ff-ff-ff-ff.info":  padInfo,
			claimed.Key() + ".info":   padInfo,
			"aa-bb-cc-dd-ee-01.info":  []byte("root::0:0::/root:/bin/sh\n"),
			"aa-bb-cc-dd-ee-02.info":  append(bytes.Repeat([]byte("#\n"), bonds.MaxInfoSize), padInfo...),
			"aa-bb-cc-dd-ee-03.cache": padCache,
			"e4-17-d8-c5-67-6d.info":  []byte("[LinkKey]\nKey=00000000000000000000000000000000\n"),
		},
	})
	// Foreign: another adapter's bond here, this adapter's label in another
	// namespace.
	create(t, ctx, bonds.EncodeSecret(ns, bonds.Bond{Adapter: unclaimed, Device: bdaddr.MustParse("AA:BB:CC:DD:EE:0A"), Info: padInfo}))
	namespaceWithReader(t, ctx, "elsewhere")
	create(t, ctx, bonds.EncodeSecret("elsewhere", bonds.Bond{Adapter: claimed, Device: bdaddr.MustParse("AA:BB:CC:DD:EE:0B"), Info: padInfo}))

	n := newNode(t)
	base := t.TempDir()
	root := filepath.Join(base, "bluetooth") // the emptyDir
	if err := os.Mkdir(root, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "beside"), []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, base)

	var stderr bytes.Buffer
	code := run(ctx, n.args(root), env(map[string]string{"POD_NAMESPACE": ns}), &stderr, n.world(client))
	t.Logf("stderr:\n%s", stderr.String())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}

	a := claimed.String()
	want := map[string]string{}
	for k, v := range before {
		want[k] = v
	}
	for rel, v := range map[string]string{
		"bluetooth/" + a:                                  "drwx------",
		"bluetooth/" + a + "/" + pad.String():             "drwx------",
		"bluetooth/" + a + "/" + pad.String() + "/info":   "-rw------- " + string(padInfo),
		"bluetooth/" + a + "/cache":                       "drwx------",
		"bluetooth/" + a + "/cache/" + pad.String():       "-rw------- " + string(padCache),
		"bluetooth/" + a + "/" + mouse.String():           "drwx------",
		"bluetooth/" + a + "/" + mouse.String() + "/info": "-rw------- " + string(mouseInfo),
		// For the operator container: the adapter it serves.
		"bluetooth/" + bonds.ClaimedFile: "-rw-r--r-- " + a + "\n",
	} {
		want[rel] = v
	}
	got := snapshot(t, base)
	for rel, w := range want {
		if got[rel] != w {
			t.Errorf("%s: %.60q, want %.60q", rel, got[rel], w)
		}
	}
	for rel := range got {
		if _, ok := want[rel]; !ok {
			t.Errorf("unexpected %s", rel)
		}
	}

	log := stderr.String()
	for _, line := range []string{
		"bondfetch: hci3, below the claimed USB device " + filepath.Join(n.dev, "bus/usb/001/005") + ", is the adapter at " + a,
		`secret restore/bluetooth-bond-evil key "etc-passwd.info" skipped`,
		`secret restore/bluetooth-bond-evil key "00-00-00-00-00-00.info" skipped`,
		`secret restore/bluetooth-bond-evil key "ff-ff-ff-ff-ff-ff.info" skipped: FF:FF:FF:FF:FF:FF is the broadcast address and names no device`,
		`secret restore/bluetooth-bond-evil key "` + claimed.Key() + `.info" skipped: ` + claimed.String() + ` is the adapter's own address`,
		`secret restore/bluetooth-bond-evil key "aa-bb-cc-dd-ee-01.info" skipped: info is not a BlueZ key file`,
		`secret restore/bluetooth-bond-evil key "aa-bb-cc-dd-ee-02.info" skipped: info is`,
		`secret restore/bluetooth-bond-evil key "aa-bb-cc-dd-ee-03.cache" skipped: no info`,
		`secret restore/bluetooth-bond-evil key "e4-17-d8-c5-67-6d.info" skipped: device ` + pad.String() + ` is also in secret ` + bonds.SecretName(claimed, pad),
		"restored 2 bonds of " + a + " from 3 secrets",
	} {
		if !strings.Contains(log, line) {
			t.Errorf("stderr lacks %q", line)
		}
	}
	if n.kernel.Calls(0) != 0 || n.kernel.Calls(3) != 2 {
		t.Errorf("kernel reads: hci0 %d, hci3 %d; want 0 and 2", n.kernel.Calls(0), n.kernel.Calls(3))
	}

	// The kubelet may run the init container again in the same pod: the
	// tree is left as it is.
	stderr.Reset()
	if code := run(ctx, n.args(root), env(map[string]string{"POD_NAMESPACE": ns}), &stderr, n.world(client)); code != 0 {
		t.Fatalf("second run: exit %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "0 files written, 3 unchanged") {
		t.Errorf("second run: %s", stderr.String())
	}
}

func TestNoSecretsIsSuccess(t *testing.T) {
	ctx := context.Background()
	client := namespaceWithReader(t, ctx, "unpaired")
	n := newNode(t)
	root := filepath.Join(t.TempDir(), "bluetooth")
	if err := os.Mkdir(root, 0o777); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := run(ctx, n.args(root), env(map[string]string{"POD_NAMESPACE": "unpaired"}), &stderr, n.world(client))
	if code != 0 || !strings.Contains(stderr.String(), "no stored bonds for "+claimed.String()+" (0 secrets") {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	// Only the record of the claimed adapter, for the operator.
	if entries, _ := os.ReadDir(root); len(entries) != 1 || entries[0].Name() != bonds.ClaimedFile {
		t.Fatalf("wrote %v", entries)
	}
	if a, ok, err := bonds.ReadClaimed(root); err != nil || !ok || a != claimed {
		t.Errorf("recorded %v, %v, %v; want %v", a, ok, err, claimed)
	}
}

func TestFailuresExit1NamingWhatFailed(t *testing.T) {
	ctx := context.Background()
	client := namespaceWithReader(t, ctx, "failing")
	create(t, ctx, bonds.EncodeSecret("failing", bonds.Bond{Adapter: claimed, Device: pad, Info: fixtures.BlueZ(t, "8bitdo-nes30-pro.info")}))
	good := map[string]string{"POD_NAMESPACE": "failing"}

	for _, tc := range []struct {
		name  string
		env   map[string]string
		args  func(n node, root string) []string
		world func(n node, w world) world
		want  string
	}{
		{name: "no namespace", env: map[string]string{}, want: "bondfetch: POD_NAMESPACE is not set"},
		{name: "bad namespace", env: map[string]string{"POD_NAMESPACE": "Not/A/Namespace"}, want: `POD_NAMESPACE "Not/A/Namespace" is not a namespace name`},
		{name: "bad flag", args: func(n node, root string) []string { return []string{"-nope"} }, want: "flag provided but not defined: -nope"},
		{name: "bad adapter", args: func(n node, root string) []string { return n.args(root, "-adapter", "hci") }, want: `-adapter "hci" is not hciN`},
		{
			name: "no in-cluster config",
			world: func(n node, w world) world {
				w.newClient = func(string, string) (bonds.SecretLister, error) { return nil, rest.ErrNotInCluster }
				return w
			},
			want: "API client: unable to load in-cluster configuration",
		},
		{
			name: "no AF_BLUETOOTH",
			world: func(n node, w world) world {
				w.openKernel = func() (hci.Kernel, func() error, error) {
					return nil, nil, fmt.Errorf("open AF_BLUETOOTH socket: %w (the pod needs hostNetwork)", unix.EAFNOSUPPORT)
				}
				return w
			},
			want: "bondfetch: open AF_BLUETOOTH socket: address family not supported by protocol",
		},
		{
			name: "nothing claimed",
			args: func(n node, root string) []string { return n.args(root, "-dev", "/nonexistent") },
			want: "no usbfs node under /nonexistent/bus/usb",
		},
		{
			name: "address never ready",
			args: func(n node, root string) []string { return n.args(root, "-timeout", "100ms") },
			world: func(n node, w world) world {
				n.kernel.Script(3, hcitest.Answer{Info: hci.DevInfo{ID: 3, Name: "hci3"}})
				return w
			},
			want: "the claimed adapter's address: gave up after 100ms: hci3 reports the address 00:00:00:00:00:00",
		},
		{
			name: "list forbidden",
			world: func(n node, w world) world {
				w.newClient = func(_, ns string) (bonds.SecretLister, error) {
					return serviceAccount(t, "failing", "nobody").CoreV1().Secrets(ns), nil
				}
				return w
			},
			want: "list secrets in failing with bluetooth.liken.sh/adapter=" + claimed.Key() + `: secrets is forbidden`,
		},
		{
			name: "root not writable",
			args: func(n node, root string) []string {
				if err := os.WriteFile(root, []byte("a file"), 0o644); err != nil {
					t.Fatal(err)
				}
				return n.args(root)
			},
			want: "write the bonds of " + claimed.String(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			root := filepath.Join(t.TempDir(), "bluetooth")
			args := n.args(root)
			if tc.args != nil {
				args = tc.args(n, root)
			}
			e := good
			if tc.env != nil {
				e = tc.env
			}
			w := n.world(client)
			if tc.world != nil {
				w = tc.world(n, w)
			}
			var stderr bytes.Buffer
			code := run(ctx, args, env(e), &stderr, w)
			if code != 1 || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 and %q", code, stderr.String(), tc.want)
			}
		})
	}
}

// TestHelp: -help and --help print the usage and exit 0, touching
// neither the kernel nor the API server (the world is empty).
func TestHelp(t *testing.T) {
	for _, arg := range []string{"-help", "--help", "-h"} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{arg}, env(nil), &stderr, world{})
		if code != 0 || !strings.Contains(stderr.String(), "Usage of bluetooth-bondfetch") || !strings.Contains(stderr.String(), "-root directory") {
			t.Errorf("%s: exit %d, stderr:\n%s", arg, code, stderr.String())
		}
	}
}

// TestIndexFlag reads a non-USB adapter named on the command line (the VM
// tier's virtual controllers).
func TestIndexFlag(t *testing.T) {
	ctx := context.Background()
	client := namespaceWithReader(t, ctx, "virtual")
	vm := bdaddr.MustParse("00:AA:01:00:00:00")
	create(t, ctx, bonds.EncodeSecret("virtual", bonds.Bond{Adapter: vm, Device: pad, Info: fixtures.BlueZ(t, "8bitdo-nes30-pro.info")}))
	n := newNode(t)
	n.kernel.Script(1, hcitest.Answer{Info: hci.DevInfo{ID: 1, Name: "hci1", Address: vm}})
	root := filepath.Join(t.TempDir(), "bluetooth")
	var stderr bytes.Buffer
	code := run(ctx, n.args(root, "-adapter", "hci1"), env(map[string]string{"POD_NAMESPACE": "virtual"}), &stderr, n.world(client))
	if code != 0 || !strings.Contains(stderr.String(), "hci1 is the adapter at 00:AA:01:00:00:00") {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(root, vm.String(), pad.String(), "info")); err != nil {
		t.Fatal(err)
	}
}

// TestBinary builds the command and runs it as the kubelet would, on this
// machine's real kernel: it must fail with status 1 and say why. Without
// AF_BLUETOOTH (this machine) the socket fails; with it (the VM tier) the
// empty /dev holds no claimed node.
func TestBinary(t *testing.T) {
	bin := child.BuildCommand(t, ".")
	c := apiServer(t)

	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{name: "no namespace", want: []string{"bondfetch: POD_NAMESPACE is not set"}},
		{
			name: "the real kernel",
			env:  []string{"POD_NAMESPACE=default"},
			args: []string{"-kubeconfig", c.Kubeconfig(), "-dev", t.TempDir(), "-sysfs", t.TempDir(), "-root", filepath.Join(t.TempDir(), "bluetooth")},
			want: []string{"bondfetch: open AF_BLUETOOTH socket", "hostNetwork", "no usbfs node"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Env = tc.env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("%v, want exit status 1; stderr:\n%s", err, stderr.String())
			}
			matched := false
			for _, w := range tc.want {
				matched = matched || strings.Contains(stderr.String(), w)
			}
			if !matched || !strings.HasPrefix(stderr.String(), "bondfetch: ") {
				t.Fatalf("stderr %q names none of %q", stderr.String(), tc.want)
			}
			t.Logf("stderr: %s", strings.TrimSpace(stderr.String()))
		})
	}
}

// TestLinksNoClientset: the init container lists Secrets and nothing
// else, so it links the REST client of core/v1 (bonds.NewSecretLister)
// and not client-go's clientset, whose scheme registers every API group
// at start and would cost it most of its memory.
func TestLinksNoClientset(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "k8s.io/client-go/kubernetes" || strings.HasPrefix(pkg, "k8s.io/client-go/kubernetes/") {
			t.Errorf("bluetooth-bondfetch links %s", pkg)
		}
	}
}
