// SPDX-License-Identifier: Apache-2.0

package deploy_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/test/e2e/harness"
)

// inventoryBase is deploy/inventory in the terms of checkPolicy and
// checkSecrets. It has no operator.yaml and no claim: its DaemonSet runs
// on every node, and it may touch no Secret at all.
var inventoryBase = base{
	dir:            "inventory",
	driver:         harness.LikenDriver,
	serviceAccount: "liken-inventory",
	daemonSet:      "liken-inventory",
	policy:         "liken-inventory-own-node-slices",
	objects: []string{
		"Namespace/liken-system",
		"ServiceAccount/liken-inventory",
		"ClusterRole/liken-inventory",
		"ClusterRoleBinding/liken-inventory",
		"ValidatingAdmissionPolicy/liken-inventory-own-node-slices",
		"ValidatingAdmissionPolicyBinding/liken-inventory-own-node-slices",
		"DaemonSet/liken-inventory",
	},
}

// TestInventoryBase renders and applies deploy/inventory: exactly its
// objects, a pod on every node (a node labelled liken.sh/inventory=none
// excepted) whatever the node's taints, a container with no capability
// and a read-only root, slice writes held to its own node's liken.sh
// slice, and no Secret.
func TestInventoryBase(t *testing.T) {
	ctx := t.Context()
	c, k, root := startBaseCluster(t, "node-a", "node-b", "node-liken")
	if _, err := k.run(ctx, nil, "label", "node", "node-liken", "liken.sh/inventory=none"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.run(ctx, nil, "taint", "node", "node-b", "example.com/busy=true:NoSchedule"); err != nil {
		t.Fatal(err)
	}

	rendered, err := k.run(ctx, nil, "kustomize", filepath.Join(root, "deploy", "inventory"))
	if err != nil {
		t.Fatal(err)
	}
	docs := parseDocs(t, "rendered inventory", []byte(rendered))
	var got []string
	for _, d := range docs {
		got = append(got, kindName(d))
	}
	want := slices.Clone(inventoryBase.objects)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("rendered objects %v, want %v", got, want)
	}
	checkApply(t, c, k, rendered, docs)
	if t.Failed() {
		return
	}

	// The DaemonSet controller makes one pod per node it may run on.
	client := c.Client()
	var nodes []string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=liken-inventory"})
		if err != nil {
			t.Fatal(err)
		}
		nodes = nil
		for _, p := range pods.Items {
			nodes = append(nodes, p.Spec.NodeName)
			checkInventoryPod(t, &p)
		}
		slices.Sort(nodes)
		if slices.Equal(nodes, []string{"node-a", "node-b"}) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !slices.Equal(nodes, []string{"node-a", "node-b"}) {
		t.Errorf("inventory pods on %v, want node-a and the tainted node-b, not the labelled node-liken", nodes)
	}
	t.Run("policy", func(t *testing.T) { checkPolicy(t, k, inventoryBase) })
	t.Run("secrets", func(t *testing.T) { checkSecrets(t, k, inventoryBase) })
	t.Run("rbac", func(t *testing.T) { checkRBAC(t, c, inventoryBase.dir) })
}

// checkInventoryPod: no capability, no privilege, a read-only root, and
// the host's /dev read-only.
func checkInventoryPod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	for _, ctr := range p.Spec.Containers {
		sc := ctr.SecurityContext
		if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 ||
			sc.Privileged == nil || *sc.Privileged || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("pod %s container %s: security context %+v", p.Name, ctr.Name, sc)
		}
		for _, m := range ctr.VolumeMounts {
			if strings.HasPrefix(m.MountPath, "/host/dev") && !m.ReadOnly {
				t.Errorf("pod %s mounts the host's /dev writable", p.Name)
			}
		}
	}
	if p.Spec.HostNetwork {
		t.Errorf("pod %s runs in the host's network namespace", p.Name)
	}
}
