// SPDX-License-Identifier: Apache-2.0

// Package deploy_test proves the kustomize bases in deploy/ against a real
// API server: what `kubectl apply -k deploy/<operator>` sends is what
// deploy/<operator>/operator.yaml says, the API server accepts all of it, the operators'
// DaemonSets land only where their hardware is, the admission policy
// keeps each operator's ServiceAccount to its own node's ResourceSlice,
// and the audio base's Sink and Source CRDs serve what the audio operator
// does with them and refuse a bad spec by field (audio_test.go), as the
// Bluetooth base's pairing CRDs and roles do (bluetooth_test.go).
package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/liken-sh/operators/test/e2e/harness"
)

// namespace is where both bases put the operators.
const namespace = "liken-system"

// nodeExtra is the user extra a pod-bound ServiceAccount token carries with
// the name of the pod's node.
const nodeExtra = "authentication.kubernetes.io/node-name"

// namespaced are the kinds in the bases that live in a namespace.
var namespaced = map[string]bool{
	"ServiceAccount":        true,
	"Role":                  true,
	"RoleBinding":           true,
	"DaemonSet":             true,
	"Deployment":            true,
	"Service":               true,
	"ResourceClaimTemplate": true,
}

// base describes one kustomize base and what it must contain.
type base struct {
	dir            string // under deploy/
	driver         string // the operator's DRA driver name
	serviceAccount string
	daemonSet      string
	claimTemplate  string
	policy         string // the ValidatingAdmissionPolicy's name
	// device is the liken.sh device the DaemonSet's claim must allocate
	// on a node that has it.
	device string
	// manifestSHA256 is the SHA-256 of the manifest the operator must
	// run under; operator.yaml must equal it byte for byte.
	manifestSHA256 string
	// objects lists every object the base renders, as "Kind/name".
	objects []string
	// secretVerbs are all the operator's ServiceAccount may do with
	// Secrets, and only in liken-system.
	secretVerbs []string
	// rendered, if not nil, checks more of what kustomize renders from
	// the base and its components, before anything is applied.
	rendered func(t *testing.T, k *kube, root string, objects []string)
	// applied, if not nil, checks more once the base is applied.
	applied func(t *testing.T, c *harness.Cluster, k *kube)
}

var bases = []base{
	{
		dir:            "bluetooth",
		driver:         "bluetooth.liken.sh",
		serviceAccount: "bluetooth-operator",
		daemonSet:      "bluetooth-operator",
		claimTemplate:  "bluetooth-adapter",
		policy:         "bluetooth-operator-own-node-slices",
		device:         harness.BluetoothAdapterDevice,
		// The manifest arrived on one line, with its line breaks lost;
		// this is the copy with them restored and the input-relay sidecar
		// added (operator.yaml's header).
		manifestSHA256: "0c376ec404995bb75f1be8a2ac384bb5b774330023eca243c267caa65bd7d6c8",
		objects: []string{
			"CustomResourceDefinition/adapters.bluetooth.liken.sh",
			"CustomResourceDefinition/peripherals.bluetooth.liken.sh",
			"CustomResourceDefinition/pairingrequests.bluetooth.liken.sh",
			"ClusterRole/bluetooth-pairing",
			"ClusterRole/bluetooth-viewer",
			"Namespace/liken-system",
			"ServiceAccount/bluetooth-operator",
			"ClusterRole/bluetooth-operator",
			"ClusterRoleBinding/bluetooth-operator",
			"Role/bluetooth-operator",
			"RoleBinding/bluetooth-operator",
			"ValidatingAdmissionPolicy/bluetooth-operator-own-node-slices",
			"ValidatingAdmissionPolicyBinding/bluetooth-operator-own-node-slices",
			"DeviceClass/bluetooth-adapter",
			"DeviceClass/bluetooth-input",
			"DeviceClass/gamepad",
			"ResourceClaimTemplate/bluetooth-adapter",
			"DaemonSet/bluetooth-operator",
		},
		// bonds.Sync gets, creates and updates; bonds.Fetch lists; the
		// operator watches for a bond Secret deleted by hand.
		secretVerbs: []string{"get", "list", "watch", "create", "update"},
		rendered:    checkBluetoothPodMonitor,
		applied:     checkBluetoothResources,
	},
	{
		dir:            "audio",
		driver:         "audio.liken.sh",
		serviceAccount: "audio-operator",
		daemonSet:      "audio-operator",
		claimTemplate:  "sound-card",
		policy:         "audio-operator-own-node-slices",
		device:         harness.SoundControllerDevice,
		// 001_b6cdbdd289a89b70.txt.
		manifestSHA256: "3bd365fcf940876ae2ef05f2529d87bdc2ab52041d31ad60ab1a7629dd8747c0",
		objects: []string{
			"CustomResourceDefinition/sinks.audio.liken.sh",
			"CustomResourceDefinition/sources.audio.liken.sh",
			"Namespace/liken-system",
			"ServiceAccount/audio-operator",
			"ClusterRole/audio-operator",
			"ClusterRoleBinding/audio-operator",
			"ValidatingAdmissionPolicy/audio-operator-own-node-slices",
			"ValidatingAdmissionPolicyBinding/audio-operator-own-node-slices",
			"ValidatingAdmissionPolicy/audio-operator-own-node-endpoints",
			"ValidatingAdmissionPolicyBinding/audio-operator-own-node-endpoints",
			"ValidatingAdmissionPolicy/audio-endpoint-controls",
			"ValidatingAdmissionPolicyBinding/audio-endpoint-controls",
			"DeviceClass/sound-card",
			"DeviceClass/audio-sink",
			"DeviceClass/audio-source",
			"ResourceClaimTemplate/sound-card",
			"DaemonSet/audio-operator",
			"ServiceAccount/audio-api",
			"ClusterRoleBinding/audio-api-auth-delegator",
			"ClusterRole/audio-api",
			"ClusterRoleBinding/audio-api",
			"Role/audio-api",
			"RoleBinding/audio-api",
			"ClusterRole/audio-capture-viewer",
			"Role/audio-capture-client",
			"Deployment/audio-api",
			"Service/audio-api",
		},
		rendered: checkPodMonitor,
		applied:  checkAudioResources,
	},
}

// startBaseCluster starts the control plane with a Node for each of
// nodes, stopped when the test ends, and returns it, kubectl of the
// control plane's own version bound to it, and the repository root the
// bases are rendered from.
func startBaseCluster(t *testing.T, nodes ...string) (*harness.Cluster, *kube, string) {
	t.Helper()
	ctx := t.Context()
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	kubectl, err := harness.Kubectl(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	c, err := harness.Start(ctx, harness.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	for _, node := range nodes {
		if _, err := c.AddNode(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	return c, &kube{bin: kubectl, kubeconfig: c.Kubeconfig()}, root
}

// TestBases renders each base with the kubectl of the control plane's own
// version and applies it to one real cluster with two simulated nodes:
// node-a carries liken.sh's Bluetooth adapter and sound controller, node-b
// carries no hardware. Both bases go to the same cluster, as they would on
// a real one, so the shared namespace is applied twice.
func TestBases(t *testing.T) {
	ctx := t.Context()
	c, k, root := startBaseCluster(t, "node-a", "node-b")
	if err := c.PublishLikenDevices(ctx, "node-a"); err != nil {
		t.Fatal(err)
	}

	for _, b := range bases {
		t.Run(b.dir, func(t *testing.T) {
			dir := filepath.Join(root, "deploy", b.dir)
			rendered, err := k.run(ctx, nil, "kustomize", dir)
			if err != nil {
				t.Fatal(err)
			}
			docs := parseDocs(t, "rendered "+b.dir, []byte(rendered))
			manifestBytes, err := os.ReadFile(filepath.Join(dir, "operator.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			// operator.yaml is the requirement itself, so an edit to it is
			// a change of requirement and must change this hash too.
			if sum := fmt.Sprintf("%x", sha256.Sum256(manifestBytes)); sum != b.manifestSHA256 {
				t.Errorf("%s/operator.yaml has SHA-256 %s; the manifest has %s", b.dir, sum, b.manifestSHA256)
			}
			manifestDocs := parseDocs(t, b.dir+"/operator.yaml", manifestBytes)

			t.Run("renders", func(t *testing.T) { checkRendered(t, b, docs, manifestDocs) })
			if b.rendered != nil {
				t.Run("components", func(t *testing.T) { b.rendered(t, k, root, b.objects) })
			}
			if t.Failed() {
				return
			}
			t.Run("applies", func(t *testing.T) { checkApply(t, c, k, rendered, docs) })
			if t.Failed() {
				return
			}
			t.Run("schedules", func(t *testing.T) { checkScheduling(t, c, b) })
			t.Run("policy", func(t *testing.T) { checkPolicy(t, k, b) })
			t.Run("secrets", func(t *testing.T) { checkSecrets(t, k, b) })
			t.Run("rbac", func(t *testing.T) { checkRBAC(t, c, b.dir) })
			if b.applied != nil {
				t.Run("resources", func(t *testing.T) { b.applied(t, c, k) })
			}
		})
	}
	if !t.Failed() {
		t.Run("uninstall", func(t *testing.T) { checkUninstall(t, k, root) })
	}
}

// checkRendered proves the rendered base holds exactly the expected
// objects, every namespaced one in liken-system, and that operator.yaml's
// DaemonSet and ResourceClaimTemplate come out of kustomize unchanged
// apart from that namespace.
func checkRendered(t *testing.T, b base, docs, manifestDocs []map[string]any) {
	var got []string
	for _, d := range docs {
		got = append(got, kindName(d))
		// Kustomize also puts the namespace on cluster-scoped kinds it
		// does not know, such as DeviceClass; checkApply shows the API
		// server stores those without it.
		ns, _, _ := nestedString(d, "metadata", "namespace")
		if kind, _ := d["kind"].(string); namespaced[kind] && ns != namespace {
			t.Errorf("rendered %s has namespace %q, want %q", kindName(d), ns, namespace)
		}
	}
	want := slices.Clone(b.objects)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("rendered objects:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}

	var manifestNames []string
	for _, d := range manifestDocs {
		manifestNames = append(manifestNames, kindName(d))
	}
	wantManifest := []string{"ResourceClaimTemplate/" + b.claimTemplate, "DaemonSet/" + b.daemonSet}
	if !slices.Equal(manifestNames, wantManifest) {
		t.Fatalf("operator.yaml holds %v, want %v", manifestNames, wantManifest)
	}
	for _, s := range manifestDocs {
		if _, ok, _ := nestedString(s, "metadata", "namespace"); ok {
			t.Errorf("operator.yaml's %s names a namespace; the manifest names none", kindName(s))
		}
		r := find(docs, kindName(s))
		if r == nil {
			continue // reported above
		}
		meta := r["metadata"].(map[string]any)
		if meta["namespace"] != namespace {
			t.Errorf("rendered %s namespace = %v, want %s", kindName(s), meta["namespace"], namespace)
		}
		delete(meta, "namespace")
		// As maps, so that a field no Go type knows about would count too.
		if !reflect.DeepEqual(r, s) {
			t.Errorf("rendered %s differs from operator.yaml beyond the namespace:\nrendered:      %s\noperator.yaml: %s",
				kindName(s), toYAML(t, r), toYAML(t, s))
		}
		meta["namespace"] = namespace
	}

	// As typed objects too, decoded strictly: a field the API does not
	// have, in operator.yaml or in what kustomize renders, fails here rather
	// than being dropped quietly by the API server.
	var manifestDS, renderedDS appsv1.DaemonSet
	var manifestRCT, renderedRCT resourceapi.ResourceClaimTemplate
	strict(t, find(manifestDocs, "DaemonSet/"+b.daemonSet), &manifestDS)
	strict(t, find(docs, "DaemonSet/"+b.daemonSet), &renderedDS)
	strict(t, find(manifestDocs, "ResourceClaimTemplate/"+b.claimTemplate), &manifestRCT)
	strict(t, find(docs, "ResourceClaimTemplate/"+b.claimTemplate), &renderedRCT)
	renderedDS.Namespace, renderedRCT.Namespace = "", ""
	if !apiequality.Semantic.DeepEqual(manifestDS, renderedDS) {
		t.Errorf("typed DaemonSet differs from operator.yaml's")
	}
	if !apiequality.Semantic.DeepEqual(manifestRCT, renderedRCT) {
		t.Errorf("typed ResourceClaimTemplate differs from operator.yaml's")
	}
}

// checkApply sends the rendered base to the API server the way a person
// does, and reads back what was stored.
func checkApply(t *testing.T, c *harness.Cluster, k *kube, rendered string, docs []map[string]any) {
	ctx := t.Context()
	out, err := k.run(ctx, strings.NewReader(rendered), "apply", "--server-side", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl apply --server-side:\n%s", strings.TrimSpace(out))
	applied := strings.Count(out, "serverside-applied")
	if applied != len(docs) {
		t.Errorf("kubectl reported %d objects applied, want %d", applied, len(docs))
	}

	// Read every object back as stored. The cluster-scoped ones that
	// kustomize stamped with the namespace are stored without it.
	got, err := k.run(ctx, strings.NewReader(rendered), "get", "-f", "-", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := yaml.Unmarshal([]byte(got), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != len(docs) {
		t.Errorf("read back %d objects, want %d", len(list.Items), len(docs))
	}
	for _, item := range list.Items {
		kind, _ := item["kind"].(string)
		ns, _, _ := nestedString(item, "metadata", "namespace")
		switch {
		case namespaced[kind] && ns != namespace:
			t.Errorf("%s stored in namespace %q, want %q", kindName(item), ns, namespace)
		case !namespaced[kind] && ns != "":
			t.Errorf("cluster-scoped %s stored with namespace %q", kindName(item), ns)
		}
		if kind == "ValidatingAdmissionPolicy" {
			name, _, _ := nestedString(item, "metadata", "name")
			if err := checkTypes(ctx, c, name); err != nil {
				t.Errorf("%s: %v", kindName(item), err)
			}
		}
	}
}

// checkTypes waits for the API server to type-check the policy's CEL
// against the ResourceSlice schema of every served version, and fails on
// any warning: a misspelt field would otherwise surface only as a runtime
// error that denies every slice write.
func checkTypes(ctx context.Context, c *harness.Cluster, name string) error {
	var p *admissionv1.ValidatingAdmissionPolicy
	err := poll(ctx, 30*time.Second, func() (bool, string) {
		var err error
		p, err = c.Client().AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.ObservedGeneration == p.Generation && p.Status.TypeChecking != nil,
			fmt.Sprintf("status %+v at generation %d", p.Status, p.Generation)
	})
	if err != nil {
		return fmt.Errorf("type checking: %w", err)
	}
	if w := p.Status.TypeChecking.ExpressionWarnings; len(w) > 0 {
		return fmt.Errorf("type checking warnings: %+v", w)
	}
	return nil
}

// checkScheduling proves the DaemonSet, its claim template and the
// base's DeviceClass work together as operator.yaml says: the pod on the node
// with the hardware is bound with that device allocated to its claim, and
// the pod on the node without it parks Pending.
func checkScheduling(t *testing.T, c *harness.Cluster, b base) {
	ctx := t.Context()
	client := c.Client()
	pods := map[string]*corev1.Pod{}
	err := poll(ctx, 60*time.Second, func() (bool, string) {
		list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + b.daemonSet})
		if err != nil {
			return false, err.Error()
		}
		clear(pods)
		for i := range list.Items {
			p := &list.Items[i]
			pods[daemonNode(p)] = p
		}
		a, bOK := pods["node-a"], pods["node-b"] != nil
		if a == nil || !bOK {
			return false, fmt.Sprintf("%d pods", len(list.Items))
		}
		cond := harness.PodCondition(pods["node-b"], corev1.PodScheduled)
		unschedulable := cond != nil && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable
		return a.Spec.NodeName == "node-a" && unschedulable,
			fmt.Sprintf("node-a pod bound to %q; node-b pod condition %+v", a.Spec.NodeName, cond)
	})
	if err != nil {
		t.Fatalf("DaemonSet %s: %v", b.daemonSet, err)
	}
	if n := pods["node-b"].Spec.NodeName; n != "" {
		t.Errorf("pod for node-b bound to %q; a node with no device must keep it Pending", n)
	}
	cond := harness.PodCondition(pods["node-b"], corev1.PodScheduled)
	t.Logf("node-b pod parks Pending: %s", cond.Message)

	a := pods["node-a"]
	if len(a.Status.ResourceClaimStatuses) != 1 || a.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
		t.Fatalf("node-a pod claim statuses = %+v", a.Status.ResourceClaimStatuses)
	}
	claimName := *a.Status.ResourceClaimStatuses[0].ResourceClaimName
	claim, err := c.WaitForClaimAllocated(ctx, namespace, claimName)
	if err != nil {
		t.Fatal(err)
	}
	var devices []string
	for _, r := range claim.Status.Allocation.Devices.Results {
		devices = append(devices, r.Driver+"/"+r.Device)
	}
	if want := []string{harness.LikenDriver + "/" + b.device}; !slices.Equal(devices, want) {
		t.Errorf("claim %s allocated %v, want %v", claimName, devices, want)
	}
}

// checkPolicy impersonates the operator's ServiceAccount the way a token
// projected into its pod on node-a authenticates, with the node name in
// the user extra, and proves the admission policy lets it write only its
// own driver's slice of its own node.
func checkPolicy(t *testing.T, k *kube, b base) {
	ctx := t.Context()
	user := fmt.Sprintf("system:serviceaccount:%s:%s", namespace, b.serviceAccount)
	onNodeA := []string{"--as=" + user, "--as-user-extra=" + nodeExtra + "=node-a"}
	denial := fmt.Sprintf("ValidatingAdmissionPolicy '%s'", b.policy)

	// The API server loads a new policy from an informer, so it takes
	// effect a moment after the apply. A dry run passes through admission
	// without storing anything.
	var last string
	err := poll(ctx, 30*time.Second, func() (bool, string) {
		_, err := k.run(ctx, strings.NewReader(sliceYAML(b.dir+"-probe", b.driver, "node-b")),
			append(onNodeA, "create", "--dry-run=server", "-f", "-")...)
		if err == nil {
			return false, "a slice for node-b was admitted"
		}
		last = err.Error()
		return strings.Contains(last, denial), last
	})
	if err != nil {
		t.Fatalf("the policy never refused a slice for another node: %v", err)
	}
	t.Logf("slice for node-b refused: %s", last)

	cases := []struct {
		name    string
		as      []string
		args    []string
		stdin   string
		allowed bool
		message string // in the refusal
	}{
		{
			name:    "another node",
			as:      onNodeA,
			args:    []string{"create", "-f", "-"},
			stdin:   sliceYAML(b.dir+"-node-b", b.driver, "node-b"),
			message: "may write only ResourceSlices whose spec.nodeName is that node",
		},
		{
			name:    "another driver on its own node",
			as:      onNodeA,
			args:    []string{"create", "-f", "-"},
			stdin:   sliceYAML(b.dir+"-other-driver", "other.example.com", "node-a"),
			message: "may write only ResourceSlices of driver " + b.driver,
		},
		{
			name:    "a token that names no node",
			as:      []string{"--as=" + user},
			args:    []string{"create", "-f", "-"},
			stdin:   sliceYAML(b.dir+"-no-node", b.driver, "node-a"),
			message: "token names no node",
		},
		{
			name:    "deleting liken's slice on its own node",
			as:      onNodeA,
			args:    []string{"delete", "--dry-run=server", "resourceslice", harness.LikenDriver + "-node-a"},
			message: "may write only ResourceSlices of driver " + b.driver,
		},
		{
			name:    "its own slice on its own node",
			as:      onNodeA,
			args:    []string{"create", "-f", "-"},
			stdin:   sliceYAML(b.dir+"-own", b.driver, "node-a"),
			allowed: true,
		},
		{
			name:    "updating its own slice",
			as:      onNodeA,
			args:    []string{"label", "resourceslice", b.dir + "-own", "updated=yes"},
			allowed: true,
		},
		{
			name:    "deleting its own slice",
			as:      onNodeA,
			args:    []string{"delete", "resourceslice", b.dir + "-own"},
			allowed: true,
		},
	}
	for _, tc := range cases {
		if tc.name == "deleting liken's slice on its own node" && b.driver == harness.LikenDriver {
			continue // the inventory driver is a liken.sh driver: that slice is its own
		}
		var stdin io.Reader
		if tc.stdin != "" {
			stdin = strings.NewReader(tc.stdin)
		}
		out, err := k.run(ctx, stdin, append(slices.Clone(tc.as), tc.args...)...)
		switch {
		case tc.allowed && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.allowed:
			t.Logf("%s: allowed: %s", tc.name, strings.TrimSpace(out))
		case err == nil:
			t.Errorf("%s: allowed (%s), want refused", tc.name, strings.TrimSpace(out))
		case !strings.Contains(err.Error(), denial) || !strings.Contains(err.Error(), tc.message):
			t.Errorf("%s: refused, but not by the policy with %q: %v", tc.name, tc.message, err)
		default:
			t.Logf("%s: refused: %v", tc.name, err)
		}
	}
}

// checkSecrets asks the API server's authorizer, as the operator's
// ServiceAccount, for every verb on Secrets: exactly b.secretVerbs are
// allowed in liken-system, and none anywhere else.
func checkSecrets(t *testing.T, k *kube, b base) {
	ctx := t.Context()
	as := "--as=system:serviceaccount:" + namespace + ":" + b.serviceAccount
	for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"} {
		for _, ns := range []string{namespace, "default"} {
			want := ns == namespace && slices.Contains(b.secretVerbs, verb)
			// can-i prints yes or no and exits 1 on no.
			out, err := k.run(ctx, nil, "auth", "can-i", verb, "secrets", "-n", ns, as)
			got := strings.TrimSpace(out)
			if (got != "yes" && got != "no") || (err == nil) != (got == "yes") {
				t.Fatalf("can-i %s secrets -n %s: %q, %v", verb, ns, got, err)
			}
			if wantS := map[bool]string{true: "yes", false: "no"}[want]; got != wantS {
				t.Errorf("may %s %s Secrets in %s: %s, want %s", b.serviceAccount, verb, ns, got, wantS)
			}
		}
	}
}

// sliceYAML is a ResourceSlice for node with one device.
func sliceYAML(name, driver, node string) string {
	return fmt.Sprintf(`apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: %s
spec:
  driver: %s
  nodeName: %s
  pool:
    name: %s
    generation: 1
    resourceSliceCount: 1
  devices:
    - name: probe
`, name, driver, node, node)
}

// kube runs the control plane's kubectl against the test cluster.
type kube struct {
	bin, kubeconfig string
}

// runAs runs kubectl with the impersonation flags as (none for the
// cluster's admin) and stdin, if not empty.
func (k *kube) runAs(ctx context.Context, as []string, stdin string, args ...string) (string, error) {
	var in io.Reader
	if stdin != "" {
		in = strings.NewReader(stdin)
	}
	return k.run(ctx, in, append(slices.Clone(as), args...)...)
}

// run returns kubectl's stdout; on failure the error carries its stderr.
func (k *kube) run(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig=" + k.kubeconfig}, args...)...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// parseDocs splits a multi-document YAML stream and decodes each document
// that holds anything but comments.
func parseDocs(t *testing.T, what string, data []byte) []map[string]any {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []map[string]any
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(m) > 0 {
			docs = append(docs, m)
		}
	}
	if len(docs) == 0 {
		t.Fatalf("%s: no objects", what)
	}
	return docs
}

// strict decodes an object into a typed API struct, refusing fields the
// type does not have.
func strict(t *testing.T, obj map[string]any, into any) {
	t.Helper()
	if obj == nil {
		t.Fatalf("no object to decode into %T", into)
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Errorf("%s as %T: %v", kindName(obj), into, err)
	}
}

func kindName(d map[string]any) string {
	kind, _ := d["kind"].(string)
	name, _, _ := nestedString(d, "metadata", "name")
	return kind + "/" + name
}

func find(docs []map[string]any, kn string) map[string]any {
	for _, d := range docs {
		if kindName(d) == kn {
			return d
		}
	}
	return nil
}

func nestedString(m map[string]any, path ...string) (string, bool, error) {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return "", false, fmt.Errorf("%s is not a map", p)
		}
		if cur, ok = mm[p]; !ok {
			return "", false, nil
		}
	}
	s, ok := cur.(string)
	return s, ok, nil
}

func toYAML(t *testing.T, v any) string {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// daemonNode is the node a DaemonSet pod is meant for: the DaemonSet
// controller pins each pod with a required node affinity on the node's
// name, and the pod is bound there only once the scheduler admits it.
func daemonNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// poll calls check every 200ms until it reports done or the timeout ends;
// the error then carries the last state check described.
func poll(ctx context.Context, timeout time.Duration, check func() (bool, string)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		done, state := check()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; last seen: %s", ctx.Err(), state)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
