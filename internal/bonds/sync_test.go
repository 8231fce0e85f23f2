// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/liken-sh/operators/internal/bdaddr"
)

func TestSyncWithFakeClient(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	bonds := recordedBonds(t)

	report, err := Sync(ctx, client.CoreV1().Secrets("ns"), "ns", bonds)
	if err != nil || len(report.Created) != 2 {
		t.Fatalf("first sync: %+v, %v", report, err)
	}
	report, err = Sync(ctx, client.CoreV1().Secrets("ns"), "ns", bonds)
	if err != nil || len(report.Unchanged) != 2 || len(report.Created)+len(report.Updated) != 0 {
		t.Fatalf("second sync: %+v, %v", report, err)
	}

	// Someone added a key and a label; the mouse's cache appears later.
	secrets := client.CoreV1().Secrets("ns")
	name := SecretName(adapter, mouse)
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data["note"] = []byte("kept")
	s.Labels["team"] = "games"
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cache := []byte("[General]\nName=Basilisk X HyperSpeed\n\n[Attributes]\n0x0001=2800:0007:1800\n")
	bonds[1].Cache = cache
	client.ClearActions()
	report, err = Sync(ctx, client.CoreV1().Secrets("ns"), "ns", bonds)
	if err != nil || len(report.Updated) != 1 || report.Updated[0] != name || len(report.Unchanged) != 1 {
		t.Fatalf("third sync: %+v, %v", report, err)
	}
	actions := client.Actions()
	s, _ = secrets.Get(ctx, name, metav1.GetOptions{})
	if !bytes.Equal(s.Data[CacheKey(mouse)], cache) || string(s.Data["note"]) != "kept" || s.Labels["team"] != "games" || s.Labels[AdapterLabel] != adapter.Key() {
		t.Fatalf("updated secret: labels %v keys %v", s.Labels, len(s.Data))
	}
	// Only get and update: no list, no delete.
	var verbs []string
	for _, a := range actions {
		verbs = append(verbs, a.GetVerb()+" "+a.GetNamespace())
	}
	if got := strings.Join(verbs, ","); got != "get ns,get ns,update ns" {
		t.Fatalf("requests %s", got)
	}

	// A bond with no cache leaves the stored cache alone.
	bonds[1].Cache = nil
	if report, err := Sync(ctx, client.CoreV1().Secrets("ns"), "ns", bonds); err != nil || len(report.Unchanged) != 2 {
		t.Fatalf("sync without cache: %+v, %v", report, err)
	}
}

func TestSyncLeavesForeignSecretsAlone(t *testing.T) {
	ctx := context.Background()
	pad := recordedBonds(t)[0]
	foreign := EncodeSecret("ns", pad)
	foreign.Labels[AdapterLabel] = otherRadio.Key()
	foreign.Data[InfoKey(pad.Device)] = []byte("[General]\nName=theirs\n")
	mouse := recordedBonds(t)[1]
	typed := EncodeSecret("ns", mouse)
	typed.Type = corev1.SecretTypeBasicAuth
	client := fake.NewClientset(foreign, typed)
	bad := Bond{Adapter: adapter, Device: bdaddr.MustParse("AA:BB:CC:DD:EE:07"), Info: []byte("junk")}

	report, err := Sync(ctx, client.CoreV1().Secrets("ns"), "ns", []Bond{pad, mouse, bad})
	if err == nil || len(report.Created)+len(report.Updated) != 0 {
		t.Fatalf("%+v, %v", report, err)
	}
	for _, want := range []string{"not \"" + adapter.Key() + "\": left alone", "not Opaque: left alone", "AA:BB:CC:DD:EE:07", "not stored"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	s, _ := client.CoreV1().Secrets("ns").Get(ctx, foreign.Name, metav1.GetOptions{})
	if string(s.Data[InfoKey(pad.Device)]) != "[General]\nName=theirs\n" {
		t.Fatal("a Secret of another adapter was overwritten")
	}
}

func TestSyncConflictIsRetriedNextPass(t *testing.T) {
	ctx := context.Background()
	b := recordedBonds(t)[0]
	old := EncodeSecret("ns", b)
	old.Data[InfoKey(b.Device)] = []byte("[General]\nName=old\n")
	client := fake.NewClientset(old)
	client.PrependReactor("update", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, old.Name, nil)
	})
	_, err := Sync(ctx, client.CoreV1().Secrets("ns"), "ns", []Bond{b, recordedBonds(t)[1]})
	if !apierrors.IsConflict(err) {
		t.Fatalf("%v, want the conflict", err)
	}
	// The other bond was still stored.
	if _, err := client.CoreV1().Secrets("ns").Get(ctx, SecretName(adapter, mouse), metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}

// An info that holds no key (BlueZ rewrote it after a failed re-pair, or
// trusts a device it never bonded) is never stored: neither as a new
// Secret, nor over a Secret whose info holds the link key.
func TestSyncRefusesAnInfoWithoutKeys(t *testing.T) {
	ctx := context.Background()
	bonded := recordedBonds(t)[0]
	client := fake.NewClientset(EncodeSecret("ns", bonded))
	keyless := []byte("[General]\nName=8Bitdo NES30 Pro\nClass=0x002508\nTrusted=true\n")
	stranger := Bond{Adapter: adapter, Device: bdaddr.MustParse("AA:BB:CC:DD:EE:0A"), Info: []byte("[General]\nName=Living room TV\nTrusted=true\n")}
	afterFailedRepair := Bond{Adapter: adapter, Device: pad, Info: keyless}

	report, err := Sync(ctx, client.CoreV1().Secrets("ns"), "ns", []Bond{afterFailedRepair, stranger, recordedBonds(t)[1]})
	if err == nil {
		t.Fatal("no error for two infos without keys")
	}
	if len(report.Created) != 1 || report.Created[0] != SecretName(adapter, mouse) || len(report.Updated) != 0 {
		t.Fatalf("report %+v, want only the mouse created", report)
	}
	for _, want := range []string{pad.String() + " of adapter " + adapter.String() + ": info holds no link key or long term key", "AA:BB:CC:DD:EE:0A", "not stored"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	s, err := client.CoreV1().Secrets("ns").Get(ctx, SecretName(adapter, pad), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s.Data[InfoKey(pad)], bonded.Info) {
		t.Fatalf("the stored link key was replaced by %q", s.Data[InfoKey(pad)])
	}
	if _, err := client.CoreV1().Secrets("ns").Get(ctx, SecretName(adapter, stranger.Device), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a Secret was created for a device without a bond: %v", err)
	}
}

// A DualShock 3 set up by BlueZ's sixaxis plugin is stored trusted with
// no key: it is a bond, written back like any other, but never over a
// Secret that holds a key.
func TestSyncStoresKeylessSixaxisBonds(t *testing.T) {
	ctx := context.Background()
	ds3 := bdaddr.MustParse("00:1B:FB:11:22:33")
	info := []byte("[General]\nName=PLAYSTATION(R)3 Controller\nClass=0x000508\nTrusted=true\n\n[DeviceID]\nSource=2\nVendor=1356\nProduct=616\nVersion=0\n")
	client := fake.NewClientset()
	report, err := Sync(ctx, client.CoreV1().Secrets("ns"), "ns", []Bond{{Adapter: adapter, Device: ds3, Info: info}})
	if err != nil || len(report.Created) != 1 {
		t.Fatalf("report %+v, %v; want the DualShock 3 stored", report, err)
	}
	s, err := client.CoreV1().Secrets("ns").Get(ctx, SecretName(adapter, ds3), metav1.GetOptions{})
	if err != nil || !bytes.Equal(s.Data[InfoKey(ds3)], info) {
		t.Fatalf("stored %q, %v", s.Data[InfoKey(ds3)], err)
	}
	// The same file over a Secret that holds a key for it is refused.
	keyed := recordedBonds(t)[0]
	client = fake.NewClientset(EncodeSecret("ns", keyed))
	if _, err := Sync(ctx, client.CoreV1().Secrets("ns"), "ns", []Bond{{Adapter: adapter, Device: keyed.Device, Info: info}}); err == nil || !strings.Contains(err.Error(), "holds a key") {
		t.Errorf("a keyless info over a keyed Secret: %v", err)
	}
	if s, _ := client.CoreV1().Secrets("ns").Get(ctx, SecretName(adapter, keyed.Device), metav1.GetOptions{}); !bytes.Equal(s.Data[InfoKey(keyed.Device)], keyed.Info) {
		t.Error("the keyed Secret was overwritten")
	}
}
