// SPDX-License-Identifier: Apache-2.0

package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/test/e2e/harness"
)

// bluetoothOperator is how the bluetooth operator's pod on node
// authenticates.
func bluetoothOperator(node string) []string {
	return []string{
		"--as=system:serviceaccount:" + namespace + ":bluetooth-operator",
		"--as-user-extra=" + nodeExtra + "=" + node,
	}
}

// checkBluetoothResources runs once the Bluetooth base is applied: the
// three pairing CRDs are served, their schemas refuse bad specs by field,
// the operator's ServiceAccount may do what the operator does with them
// and no more, and a person bound to bluetooth-pairing in their own
// namespace can pair and do nothing else.
func checkBluetoothResources(t *testing.T, c *harness.Cluster, k *kube) {
	ctx := t.Context()
	if _, err := k.run(ctx, nil, "wait", "--for=condition=Established", "--timeout=30s",
		"crd/adapters.bluetooth.liken.sh", "crd/peripherals.bluetooth.liken.sh",
		"crd/pairingrequests.bluetooth.liken.sh"); err != nil {
		t.Fatalf("CRDs never established: %v", err)
	}
	t.Run("schema", func(t *testing.T) { checkPairingSchema(t, k) })
	t.Run("verbs", func(t *testing.T) { checkBluetoothVerbs(t, k) })
	t.Run("person", func(t *testing.T) { checkPairingPerson(t, k) })
}

// requestJSON is a PairingRequest in namespace ns with spec.
func requestJSON(t *testing.T, ns, name string, spec map[string]any) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{
		"apiVersion": btv1.GroupVersion.String(), "kind": "PairingRequest",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// checkPairingSchema: the defaults land, and every bad spec is refused
// with the field named, at create and at update, leaving the stored
// object as it was.
func checkPairingSchema(t *testing.T, k *kube) {
	ctx := t.Context()
	const adapter = "00-1a-7d-da-71-13"
	if _, err := k.run(ctx, strings.NewReader(requestJSON(t, "default", "valid", map[string]any{"adapter": adapter})), "create", "-f", "-"); err != nil {
		t.Fatalf("valid request refused: %v", err)
	}
	out, err := k.run(ctx, nil, "get", "pairingrequest", "valid", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var stored btv1.PairingRequest
	if err := json.Unmarshal([]byte(out), &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Spec.WindowSeconds != btv1.DefaultWindowSeconds || stored.Spec.TTLSecondsAfterFinished == nil ||
		*stored.Spec.TTLSecondsAfterFinished != btv1.DefaultTTLSecondsAfterFinished {
		t.Errorf("defaults: windowSeconds %d, ttl %v", stored.Spec.WindowSeconds, stored.Spec.TTLSecondsAfterFinished)
	}

	cases := []struct {
		name, field string
		spec        map[string]any
	}{
		{"a window of a year", "spec.windowSeconds", map[string]any{"adapter": adapter, "windowSeconds": 365 * 24 * 3600}},
		{"a window of 1 s", "spec.windowSeconds", map[string]any{"adapter": adapter, "windowSeconds": 1}},
		{"an adapter spelt with both separators", "spec.adapter is not an adapter's address", map[string]any{"adapter": "00:1A-7D:DA:71:13"}},
		{"an adapter that is a name", "spec.adapter is not an adapter's address", map[string]any{"adapter": "kitchen"}},
		{"no adapter", "spec.adapter", map[string]any{"windowSeconds": 60}},
		{"a device that is no address", "spec.device is not a Bluetooth address", map[string]any{"adapter": adapter, "device": "gamepad"}},
		{"a PIN of 17 characters", "spec.pin", map[string]any{"adapter": adapter, "pin": strings.Repeat("1", 17)}},
		{"a PIN with a newline", "spec.pin", map[string]any{"adapter": adapter, "pin": "12\n34"}},
		{"a negative TTL", "spec.ttlSecondsAfterFinished", map[string]any{"adapter": adapter, "ttlSecondsAfterFinished": -1}},
	}
	for i, c := range cases {
		_, err := k.run(ctx, strings.NewReader(requestJSON(t, "default", fmt.Sprintf("bad-%d", i), c.spec)), "create", "-f", "-")
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: refused without naming %s: %v", c.name, c.field, err)
		}
	}
	// Both spellings of both addresses are taken, as the kubectl plugin
	// takes them: the adapter as BlueZ spells it, the device as its
	// Peripheral is named.
	spelt := map[string]any{"adapter": "00:1A:7D:DA:71:13", "device": "e4-17-d8-c5-67-6d"}
	if _, err := k.run(ctx, strings.NewReader(requestJSON(t, "default", "spelt", spelt)), "create", "-f", "-"); err != nil {
		t.Errorf("a request with the other spellings: %v", err)
	}
	// At update: the adapter cannot change (in any spelling), nor the
	// window, even within its bounds: the operator opened it once, for its
	// first length.
	for _, p := range []struct{ name, patch, field string }{
		{"moving to another adapter", `{"spec":{"adapter":"00-1a-7d-da-71-14"}}`, "spec.adapter cannot change"},
		{"moving to another adapter, spelt with colons", `{"spec":{"adapter":"00:1A:7D:DA:71:14"}}`, "spec.adapter cannot change"},
		{"a window of a year", `{"spec":{"windowSeconds":31536000}}`, "spec.windowSeconds"},
		{"a longer window", `{"spec":{"windowSeconds":300}}`, "spec.windowSeconds cannot change"},
		{"a shorter window", `{"spec":{"windowSeconds":15}}`, "spec.windowSeconds cannot change"},
	} {
		_, err := k.run(ctx, nil, "patch", "pairingrequest", "valid", "--type=merge", "-p", p.patch)
		if err == nil || !strings.Contains(err.Error(), p.field) {
			t.Errorf("%s: %v, want a refusal naming %q", p.name, err, p.field)
		}
	}
	if got, _ := k.run(ctx, nil, "get", "pairingrequest", "valid", "-o", "jsonpath={.spec.adapter} {.spec.windowSeconds}"); got != adapter+" 180" {
		t.Errorf("stored spec after the refused updates: %q", got)
	}
	// The approval is given once: set where there was none, it may then
	// be respelt but not moved to another device, emptied or removed.
	if _, err := k.run(ctx, nil, "patch", "pairingrequest", "valid", "--type=merge", "-p", `{"spec":{"device":"E4:17:D8:C5:67:6D"}}`); err != nil {
		t.Errorf("approving a device: %v", err)
	}
	for _, p := range []struct{ name, patch string }{
		{"moving the approval to another device", `{"spec":{"device":"E4:17:D8:C5:67:6E"}}`},
		{"moving the approval, spelt with dashes", `{"spec":{"device":"e4-17-d8-c5-67-6e"}}`},
		{"emptying the approval", `{"spec":{"device":""}}`},
		{"removing the approval", `{"spec":{"device":null}}`},
	} {
		for _, name := range []string{"valid", "spelt"} {
			_, err := k.run(ctx, nil, "patch", "pairingrequest", name, "--type=merge", "-p", p.patch)
			if err == nil || !strings.Contains(err.Error(), "spec.device cannot change once set") {
				t.Errorf("%s of request %s: %v, want a refusal naming spec.device", p.name, name, err)
			}
		}
	}
	if _, err := k.run(ctx, nil, "patch", "pairingrequest", "valid", "--type=merge", "-p", `{"spec":{"device":"e4-17-d8-c5-67-6d"}}`); err != nil {
		t.Errorf("respelling the approval: %v", err)
	}
	if got, _ := k.run(ctx, nil, "get", "pairingrequest", "spelt", "-o", "jsonpath={.spec.device}"); got != "e4-17-d8-c5-67-6d" {
		t.Errorf("request spelt's approval after the refused updates: %q", got)
	}
	checkClosesColumn(t, k, "valid")

	// An Adapter is named by an address: a name no radio can have (an
	// interface name, an address cut short) is refused, not left to wait
	// for an operator that will never come.
	for _, name := range []string{"hci0", "00-1a-7d-da-71-1", "00-1a-7d-da-71-13.kitchen"} {
		adapter := fmt.Sprintf(`{"apiVersion":%q,"kind":"Adapter","metadata":{"name":%q}}`, btv1.GroupVersion.String(), name)
		if _, err := k.run(ctx, strings.NewReader(adapter), "create", "-f", "-"); err == nil ||
			!strings.Contains(err.Error(), "an Adapter is named by its radio's address in lowercase with dashes") {
			t.Errorf("an Adapter named %q: %v, want a refusal naming the address form", name, err)
		}
	}

	// A Peripheral: trusted defaults to true, a 10 KB alias is refused.
	per := func(name string, spec map[string]any) string {
		data, _ := json.Marshal(map[string]any{"apiVersion": btv1.GroupVersion.String(), "kind": "Peripheral",
			"metadata": map[string]any{"name": name}, "spec": spec})
		return string(data)
	}
	if _, err := k.run(ctx, strings.NewReader(per("e4-17-d8-c5-67-6d", nil)), "create", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	if got, _ := k.run(ctx, nil, "get", "peripheral", "e4-17-d8-c5-67-6d", "-o", "jsonpath={.spec.trusted}"); got != "true" {
		t.Errorf("spec.trusted of a new Peripheral = %q, want true", got)
	}
	if _, err := k.run(ctx, strings.NewReader(per("e4-17-d8-c5-67-6e", map[string]any{"alias": strings.Repeat("x", 10<<10)})), "create", "-f", "-"); err == nil ||
		!strings.Contains(err.Error(), "spec.alias") {
		t.Errorf("a 10 KB alias: %v, want a refusal naming spec.alias", err)
	}
	if _, err := k.run(ctx, strings.NewReader(strings.Replace(per("00-1a-7d-da-71-13", map[string]any{"alias": strings.Repeat("x", 249)}), "Peripheral", "Adapter", 1)), "create", "-f", "-"); err == nil ||
		!strings.Contains(err.Error(), "spec.alias") {
		t.Errorf("an Adapter alias of 249 bytes: %v, want a refusal naming spec.alias", err)
	}
	// Bytes, not characters: 200 "é" are 400 bytes; and no control
	// character, which would reach the terminal of whoever lists it.
	for what, alias := range map[string]string{"400 bytes in 200 characters": strings.Repeat("é", 200), "an escape sequence": "desk\x1b]0;pwned\x07", "a newline": "desk\nX",
		"a C1 control": "desk\u0085X", "a right-to-left override": "desk\u202eX", "a zero-width space": "de\u200bsk"} {
		for _, kind := range []string{"Peripheral", "Adapter"} {
			name := "e4-17-d8-c5-67-6f"
			if kind == "Adapter" {
				name = "00-1a-7d-da-71-14"
			}
			if _, err := k.run(ctx, strings.NewReader(strings.Replace(per(name, map[string]any{"alias": alias}), "Peripheral", kind, 1)), "create", "-f", "-"); err == nil ||
				!strings.Contains(err.Error(), "spec.alias") {
				t.Errorf("a %s alias with %s: %v, want a refusal naming spec.alias", kind, what, err)
				_, _ = k.run(ctx, nil, "delete", strings.ToLower(kind), name)
			}
		}
	}
	if _, err := k.run(ctx, strings.NewReader(per("e4-17-d8-c5-67-70", map[string]any{"alias": strings.Repeat("é", 124)})), "create", "-f", "-"); err != nil {
		t.Errorf("a 248-byte alias of 124 characters: %v, want it accepted", err)
	}
	// Respelling the same adapter is no move.
	if _, err := k.run(ctx, nil, "patch", "pairingrequest", "spelt", "--type=merge", "-p", `{"spec":{"adapter":"00-1a-7d-da-71-13"}}`); err != nil {
		t.Errorf("respelling the adapter: %v", err)
	}
	for _, obj := range [][]string{{"pairingrequest", "valid"}, {"pairingrequest", "spelt"}, {"peripheral", "e4-17-d8-c5-67-6d"}, {"peripheral", "e4-17-d8-c5-67-70"}} {
		_, _ = k.run(ctx, nil, "delete", obj[0], obj[1])
	}
}

// checkBluetoothVerbs asks the authorizer, as the operator's
// ServiceAccount, for every verb on the three kinds and their status:
// exactly what the operator uses is allowed.
func checkBluetoothVerbs(t *testing.T, k *kube) {
	ctx := t.Context()
	allowed := map[string][]string{
		"adapters":               {"get", "list", "watch", "create", "update", "patch"},
		"peripherals":            {"get", "list", "watch", "create", "update", "patch"},
		"pairingrequests":        {"get", "list", "watch", "delete"},
		"adapters/status":        {"get", "update", "patch"},
		"peripherals/status":     {"get", "update", "patch"},
		"pairingrequests/status": {"get", "update", "patch"},
	}
	for res, verbs := range allowed {
		resource, sub, _ := strings.Cut(res, "/")
		for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"} {
			args := append(bluetoothOperator("node-a"), "auth", "can-i", verb, resource+".bluetooth.liken.sh", "--all-namespaces")
			if sub != "" {
				args = append(args, "--subresource="+sub)
			}
			out, _ := k.run(ctx, nil, args...)
			want := map[bool]string{true: "yes", false: "no"}[slices.Contains(verbs, verb)]
			if got := strings.TrimSpace(out); got != want {
				t.Errorf("may bluetooth-operator %s %s: %q, want %s", verb, res, got, want)
			}
		}
	}
}

// checkPairingPerson binds bluetooth-pairing to alice in her namespace
// and gives bob a Role with only create and update on PairingRequests:
// both can open a window and approve a device (bob at creation), and
// neither can read a bond Secret, run or exec into a pod, write a
// request's status, unpair, or pair in another namespace.
func checkPairingPerson(t *testing.T, k *kube) {
	ctx := t.Context()
	const adapter = "00-1a-7d-da-71-13"
	must := func(stdin string, args ...string) {
		t.Helper()
		if _, err := k.runAs(ctx, nil, stdin, args...); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{"alice", "bob"} {
		must("", "create", "namespace", ns)
	}
	must("", "create", "rolebinding", "alice-pairs", "-n", "alice", "--clusterrole=bluetooth-pairing", "--user=alice")
	must("", "create", "role", "pair-only", "-n", "bob", "--verb=create,update", "--resource=pairingrequests.bluetooth.liken.sh")
	must("", "create", "rolebinding", "bob-pairs", "-n", "bob", "--role=pair-only", "--user=bob")

	for _, who := range []string{"alice", "bob"} {
		as := []string{"--as=" + who}
		// alice opens a window and approves a device that answered by
		// updating the request; bob, who cannot read it back, names the
		// device at creation, which pairs it as soon as it answers.
		spec := map[string]any{"adapter": adapter}
		if who == "bob" {
			spec["device"] = "E4:17:D8:C5:67:6D"
		}
		if _, err := k.runAs(ctx, as, requestJSON(t, who, "pad", spec), "create", "-f", "-"); err != nil {
			t.Errorf("%s opening a window: %v", who, err)
			continue
		}
		if who == "alice" {
			if _, err := k.runAs(ctx, as, "", "patch", "pairingrequest", "pad", "-n", who, "--type=merge", "-p", `{"spec":{"device":"E4:17:D8:C5:67:6D"}}`); err != nil {
				t.Errorf("%s approving a device: %v", who, err)
			}
		}
		refused := [][]string{
			{"get", "secrets", "-n", namespace},
			{"run", "x", "-n", namespace, "--image=x", "--dry-run=server"},
			{"auth", "can-i", "create", "pods/exec", "-n", namespace},
			{"delete", "peripheral", "e4-17-d8-c5-67-6d"},
			{"patch", "pairingrequest", "pad", "-n", who, "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Paired"}}`},
			{"create", "-f", "-"}, // in the other namespace
			{"delete", "adapter", adapter},
		}
		other := map[string]string{"alice": "bob", "bob": "alice"}[who]
		for _, r := range refused {
			stdin := ""
			if r[0] == "create" && r[1] == "-f" {
				stdin = requestJSON(t, other, "sneak", map[string]any{"adapter": adapter})
			}
			out, err := k.runAs(ctx, as, stdin, r...)
			if r[0] == "auth" {
				if strings.TrimSpace(out) != "no" {
					t.Errorf("%s may %v: %q", who, r, out)
				}
				continue
			}
			if err == nil || !strings.Contains(strings.ToLower(err.Error()), "forbidden") {
				t.Errorf("%s %v: %v, want forbidden", who, r, err)
			}
		}
	}
	for _, who := range []string{"alice", "bob"} {
		if got, _ := k.run(ctx, nil, "get", "pairingrequest", "pad", "-n", who, "-o", "jsonpath={.spec.device}"); got != "E4:17:D8:C5:67:6D" {
			t.Errorf("%s's approval stored as %q", who, got)
		}
	}
}

// checkBluetoothPodMonitor renders the base with its podmonitor
// component: the PodMonitor selects the operator's pods by operator.yaml's
// label, and the operator container gets METRICS_ADDRESS and the port
// named metrics, with the rest of the pod as operator.yaml has it.
func checkBluetoothPodMonitor(t *testing.T, k *kube, root string, _ []string) {
	ctx := t.Context()
	overlay := t.TempDir()
	base, err := filepath.Rel(overlay, filepath.Join(root, "deploy", "bluetooth"))
	if err != nil {
		t.Fatal(err)
	}
	kust := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - %s\ncomponents:\n  - %s\n",
		base, filepath.Join(base, "components", "podmonitor"))
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := k.run(ctx, nil, "kustomize", overlay)
	if err != nil {
		t.Fatal(err)
	}
	docs := parseDocs(t, "rendered overlay", []byte(out))
	pm := find(docs, "PodMonitor/bluetooth-operator")
	if pm == nil {
		t.Fatal("the overlay renders no PodMonitor/bluetooth-operator")
	}
	if ns, _, _ := nestedString(pm, "metadata", "namespace"); ns != namespace {
		t.Errorf("PodMonitor namespace %q", ns)
	}
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name string `json:"name"`
						Env  []struct {
							Name  string `json:"name"`
							Value string `json:"value"`
						} `json:"env"`
						Ports []struct {
							Name          string `json:"name"`
							ContainerPort int    `json:"containerPort"`
						} `json:"ports"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	data, _ := json.Marshal(find(docs, "DaemonSet/bluetooth-operator"))
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != "operator" {
			continue
		}
		found = true
		var env []string
		for _, e := range c.Env {
			env = append(env, e.Name+"="+e.Value)
		}
		if !slices.Contains(env, "METRICS_ADDRESS=:9250") || !slices.Contains(env, "NODE_NAME=") {
			t.Errorf("operator env %v: want operator.yaml's and METRICS_ADDRESS=:9250", env)
		}
		if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != 9250 {
			t.Errorf("operator ports %+v", c.Ports)
		}
	}
	if !found {
		t.Error("no operator container")
	}
}

// checkClosesColumn: `kubectl get -o wide` shows when an open request's
// window closes as the time itself. A date column would show it as an
// age, which kubectl prints as <invalid> for a time still to come.
func checkClosesColumn(t *testing.T, k *kube, name string) {
	ctx := t.Context()
	closes := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	if _, err := k.run(ctx, nil, "patch", "pairingrequest", name, "--subresource=status", "--type=merge",
		"-p", fmt.Sprintf(`{"status":{"phase":"Open","windowClosesAt":%q}}`, closes)); err != nil {
		t.Fatal(err)
	}
	out, err := k.run(ctx, nil, "get", "pairingrequest", name, "-o", "wide")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "CLOSES") {
		t.Fatalf("kubectl get -o wide printed %q, want a header with CLOSES and one row", out)
	}
	if !strings.Contains(lines[1], " "+closes+" ") || strings.Contains(lines[1], "<invalid>") {
		t.Errorf("kubectl get -o wide printed %q, want the time the window closes, %s", lines[1], closes)
	}
}
