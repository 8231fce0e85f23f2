// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/test/e2e/harness"
)

const namespace = "liken-system"

// serviceAccountClient returns a client acting as ServiceAccount name in
// namespace, bound to a Role granting exactly verbs on Secrets there.
func serviceAccountClient(t *testing.T, ctx context.Context, cluster *harness.Cluster, name string, verbs ...string) kubernetes.Interface {
	t.Helper()
	admin := cluster.Client()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: verbs}},
	}
	if _, err := admin.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}},
	}
	if _, err := admin.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := cluster.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + name}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// RBAC caches catch up within moments of the binding.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := client.CoreV1().Secrets(namespace).Get(ctx, "probe", metav1.GetOptions{})
		_, lerr := client.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{Limit: 1})
		if (apierrors.IsNotFound(err) || !contains(verbs, "get")) && (lerr == nil || !contains(verbs, "list")) {
			return client
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s role never took effect: %v / %v", name, err, lerr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestRoundTripThroughTheAPIServer proves the whole cycle on a real API
// server, each side with only the permissions it is given in deploy: the
// operator's write-back (get, create, update) stores the recorded tree,
// and bondfetch's restore (list) brings back the same bytes into a fresh
// tree.
func TestRoundTripThroughTheAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster, err := harness.Start(ctx, harness.Options{Logf: t.Logf, WithoutScheduler: true, WithoutControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	admin := cluster.Client()
	for _, ns := range []string{namespace, "elsewhere"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	operator := serviceAccountClient(t, ctx, cluster, "bluetooth-operator", "get", "create", "update")
	// bondfetch's Role and binding; it lists through its narrow client,
	// as that ServiceAccount.
	serviceAccountClient(t, ctx, cluster, "bondfetch", "list")
	fetchConfig := cluster.RESTConfig()
	fetchConfig.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":bondfetch"}
	lister, err := NewSecretLister(fetchConfig, namespace)
	if err != nil {
		t.Fatal(err)
	}

	// The operator cannot list Secrets, and needs not.
	if _, err := operator.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the operator's role allows list: %v", err)
	}

	// Write-back from the recorded tree.
	root := bluezTree(t)
	bonds, skipped, err := ReadTree(root, adapter)
	if err != nil || len(skipped) != 0 || len(bonds) != 2 {
		t.Fatalf("read tree: %d bonds, %v, %v", len(bonds), skipped, err)
	}
	report, err := Sync(ctx, operator.CoreV1().Secrets(namespace), namespace, bonds)
	if err != nil || len(report.Created) != 2 {
		t.Fatalf("sync: %+v, %v", report, err)
	}
	stored, err := admin.CoreV1().Secrets(namespace).Get(ctx, SecretName(adapter, pad), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Type != corev1.SecretTypeOpaque || stored.Labels[AdapterLabel] != adapter.Key() ||
		!bytes.Equal(stored.Data[InfoKey(pad)], bonds[0].Info) || !bytes.Equal(stored.Data[CacheKey(pad)], bonds[0].Cache) {
		t.Fatalf("stored secret: type %s labels %v", stored.Type, stored.Labels)
	}

	// An idle pass writes nothing: the resourceVersion stays.
	report, err = Sync(ctx, operator.CoreV1().Secrets(namespace), namespace, bonds)
	if err != nil || len(report.Unchanged) != 2 {
		t.Fatalf("idle sync: %+v, %v", report, err)
	}
	again, _ := admin.CoreV1().Secrets(namespace).Get(ctx, stored.Name, metav1.GetOptions{})
	if again.ResourceVersion != stored.ResourceVersion {
		t.Fatalf("idle sync rewrote the secret: %s -> %s", stored.ResourceVersion, again.ResourceVersion)
	}

	// The mouse's cache lands late, as BlueZ writes it.
	mouseCache := []byte("[General]\nName=Basilisk X HyperSpeed\n\n[Attributes]\n0x0001=2800:0007:1800\n")
	writeFile(t, filepath.Join(AdapterDir(root, adapter), "cache", mouse.String()), mouseCache, 0o600)
	bonds, _, _ = ReadTree(root, adapter)
	report, err = Sync(ctx, operator.CoreV1().Secrets(namespace), namespace, bonds)
	if err != nil || len(report.Updated) != 1 || report.Updated[0] != SecretName(adapter, mouse) {
		t.Fatalf("late cache: %+v, %v", report, err)
	}

	// Decoys bondfetch must not pick up: another adapter's bond here, and
	// this adapter's label in another namespace.
	decoy := EncodeSecret(namespace, Bond{Adapter: otherRadio, Device: pad, Info: []byte("[LinkKey]\nKey=00000000000000000000000000000001\n")})
	if _, err := admin.CoreV1().Secrets(namespace).Create(ctx, decoy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	away := EncodeSecret("elsewhere", Bond{Adapter: adapter, Device: bdaddr.MustParse("AA:BB:CC:DD:EE:09"), Info: bonds[1].Info})
	if _, err := admin.CoreV1().Secrets("elsewhere").Create(ctx, away, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Restore into a fresh tree.
	fetched, err := Fetch(ctx, lister, namespace, adapter)
	if err != nil {
		t.Fatal(err)
	}
	if fetched.Secrets != 2 || len(fetched.Bonds) != 2 || len(fetched.Skipped) != 0 {
		t.Fatalf("fetched %d secrets, %d bonds, skipped %v", fetched.Secrets, len(fetched.Bonds), fetched.Skipped)
	}
	fresh := filepath.Join(t.TempDir(), "bluetooth")
	if _, err := WriteTree(fresh, adapter, fetched.Bonds); err != nil {
		t.Fatal(err)
	}
	// Byte for byte, every bond file of the original tree and nothing else.
	orig := AdapterDir(root, adapter)
	want := map[string][]byte{}
	for _, rel := range []string{pad.String() + "/info", "cache/" + pad.String(), mouse.String() + "/info", "cache/" + mouse.String()} {
		b, err := os.ReadFile(filepath.Join(orig, rel))
		if err != nil {
			t.Fatal(err)
		}
		want[rel] = b
	}
	got := 0
	err = filepath.Walk(fresh, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(AdapterDir(fresh, adapter), path)
		b, _ := os.ReadFile(path)
		if w, ok := want[rel]; !ok || !bytes.Equal(b, w) {
			t.Errorf("restored %s differs from the original (known: %v)", rel, ok)
		}
		if info.Mode().Perm() != FileMode {
			t.Errorf("%s has mode %v", rel, info.Mode())
		}
		got++
		return nil
	})
	if err != nil || got != len(want) {
		t.Fatalf("restored %d files, want %d: %v", got, len(want), err)
	}
}
