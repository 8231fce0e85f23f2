// SPDX-License-Identifier: Apache-2.0

package deploy_test

import (
	"fmt"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/test/e2e/harness"
)

// access is one request a ServiceAccount may or must not make: verb on
// group/resource (with its subresource after a slash), in namespace ns
// ("" cluster-wide), of the object named name ("" any).
type access struct {
	verb, group, resource, ns, name string
	allowed                         bool
}

func may(verb, group, resource, ns, name string) access {
	return access{verb, group, resource, ns, name, true}
}

func mayNot(verb, group, resource, ns, name string) access {
	return access{verb, group, resource, ns, name, false}
}

// rbacMatrix is, for each ServiceAccount a base runs as (in liken-system),
// what it needs and a list of what it must never be able to do. Slices and
// endpoint objects of another node are the admission policies' to refuse
// (checkPolicy); this is the authorizer's half.
var rbacMatrix = map[string]map[string][]access{
	"bluetooth": {
		"bluetooth-operator": {
			// Slices, claims and the node (the DRA driver's part).
			may("create", "resource.k8s.io", "resourceslices", "", ""),
			may("delete", "resource.k8s.io", "resourceslices", "", ""),
			may("get", "resource.k8s.io", "resourceclaims", "default", ""),
			may("update", "resource.k8s.io", "resourceclaims/status", "default", ""),
			// A claim's status.devices: its own entries, on its own node.
			may("associated-node:patch", "resource.k8s.io", "resourceclaims/driver", "default", "bluetooth.liken.sh"),
			mayNot("associated-node:patch", "resource.k8s.io", "resourceclaims/driver", "default", "audio.liken.sh"),
			mayNot("arbitrary-node:patch", "resource.k8s.io", "resourceclaims/driver", "default", "bluetooth.liken.sh"),
			may("get", "", "nodes", "", "node-a"),
			// Its objects and its bonds, in its own namespace only.
			may("update", "bluetooth.liken.sh", "adapters", "", ""),
			may("patch", "bluetooth.liken.sh", "peripherals/status", "", ""),
			may("delete", "bluetooth.liken.sh", "pairingrequests", "", ""),
			may("update", "bluetooth.liken.sh", "peripherals/finalizers", "", ""),
			may("create", "", "secrets", namespace, ""),
			may("list", "", "secrets", namespace, ""),
			may("watch", "", "secrets", namespace, ""),
			may("create", "", "events", "default", ""),
			// Never: a bond's deletion, a Secret elsewhere or
			// cluster-wide, its own rights, a pod's spec, a node.
			mayNot("delete", "", "secrets", namespace, ""),
			mayNot("deletecollection", "", "secrets", namespace, ""),
			mayNot("list", "", "secrets", "", ""),
			mayNot("get", "", "secrets", "default", ""),
			mayNot("create", "", "secrets", "kube-system", ""),
			mayNot("update", "", "nodes", "", "node-a"),
			mayNot("create", "", "pods", namespace, ""),
			mayNot("update", "resource.k8s.io", "resourceclaims", "default", ""),
			mayNot("create", "bluetooth.liken.sh", "pairingrequests", "", ""),
			mayNot("delete", "bluetooth.liken.sh", "peripherals", "", ""),
			mayNot("escalate", "rbac.authorization.k8s.io", "clusterroles", "", ""),
			mayNot("bind", "rbac.authorization.k8s.io", "rolebindings", namespace, ""),
			mayNot("create", "rbac.authorization.k8s.io", "rolebindings", namespace, ""),
			mayNot("impersonate", "", "serviceaccounts", namespace, ""),
			mayNot("create", "", "serviceaccounts/token", namespace, "bluetooth-operator"),
			mayNot("get", "audio.liken.sh", "sinks", "", ""),
		},
	},
	"audio": {
		"audio-operator": {
			may("create", "resource.k8s.io", "resourceslices", "", ""),
			may("get", "resource.k8s.io", "resourceclaims", "default", ""),
			may("patch", "resource.k8s.io", "resourceclaims/status", "default", ""),
			may("associated-node:patch", "resource.k8s.io", "resourceclaims/driver", "default", "audio.liken.sh"),
			mayNot("associated-node:patch", "resource.k8s.io", "resourceclaims/driver", "default", "bluetooth.liken.sh"),
			mayNot("arbitrary-node:patch", "resource.k8s.io", "resourceclaims/driver", "default", "audio.liken.sh"),
			may("create", "audio.liken.sh", "sinks", "", ""),
			may("update", "audio.liken.sh", "sinks/status", "", ""),
			may("patch", "audio.liken.sh", "sources/status", "", ""),
			may("create", "events.k8s.io", "events", "default", ""),
			may("create", "authentication.k8s.io", "tokenreviews", "", ""),
			// No Secret at all, no spec of a Sink (a person's), no
			// deletion of one, nothing of Bluetooth's.
			mayNot("get", "", "secrets", namespace, ""),
			mayNot("list", "", "secrets", "", ""),
			mayNot("watch", "", "secrets", namespace, ""),
			mayNot("create", "", "secrets", namespace, ""),
			mayNot("delete", "", "secrets", namespace, ""),
			mayNot("update", "audio.liken.sh", "sinks", "", ""),
			mayNot("patch", "audio.liken.sh", "sources", "", ""),
			mayNot("delete", "audio.liken.sh", "sinks", "", ""),
			mayNot("get", "audio.liken.sh", "sinks/audio", "", ""),
			mayNot("update", "", "nodes", "", "node-a"),
			mayNot("create", "", "pods/exec", namespace, ""),
			mayNot("get", "bluetooth.liken.sh", "adapters", "", ""),
			mayNot("create", "rbac.authorization.k8s.io", "clusterrolebindings", "", ""),
			mayNot("create", "authorization.k8s.io", "subjectaccessreviews", "", ""),
		},
		"audio-api": {
			may("get", "audio.liken.sh", "sinks", "", ""),
			may("get", "audio.liken.sh", "sources", "", ""),
			may("watch", "audio.liken.sh", "sinks", "", ""),
			may("create", "", "events", namespace, ""),
			may("create", "authentication.k8s.io", "tokenreviews", "", ""),
			may("create", "authorization.k8s.io", "subjectaccessreviews", "", ""),
			may("get", "", "secrets", namespace, "audio-api-tls"),
			may("update", "", "secrets", namespace, "audio-capture-server"),
			may("create", "", "secrets", namespace, ""),
			may("update", "", "configmaps", namespace, "audio-api-ca"),
			may("list", "", "pods", namespace, ""),
			// Only its own two Secrets, never another one, never a
			// deletion; no Sink it could change; no pod it could enter.
			mayNot("get", "", "secrets", namespace, "bluetooth-bond-5c-f3-70-8b-1a-2e-e4-17-d8-c5-67-6d"),
			mayNot("list", "", "secrets", namespace, ""),
			mayNot("delete", "", "secrets", namespace, "audio-api-tls"),
			mayNot("get", "", "secrets", "default", "audio-api-tls"),
			mayNot("list", "", "secrets", "", ""),
			mayNot("update", "audio.liken.sh", "sinks", "", ""),
			mayNot("update", "audio.liken.sh", "sinks/status", "", ""),
			mayNot("list", "audio.liken.sh", "sinks", "", ""),
			mayNot("watch", "audio.liken.sh", "sources", "", ""),
			mayNot("create", "", "pods/portforward", namespace, ""),
			mayNot("create", "", "pods/exec", namespace, ""),
			mayNot("list", "", "pods", "default", ""),
			mayNot("create", "resource.k8s.io", "resourceslices", "", ""),
			mayNot("update", "", "configmaps", namespace, "kube-root-ca.crt"),
		},
	},
	"inventory": {
		"liken-inventory": {
			may("create", "resource.k8s.io", "resourceslices", "", ""),
			may("list", "resource.k8s.io", "resourceclaims", "", ""),
			may("get", "", "nodes", "", "node-a"),
			mayNot("update", "resource.k8s.io", "resourceclaims/status", "default", ""),
			mayNot("get", "", "secrets", namespace, ""),
			mayNot("list", "", "secrets", "", ""),
			mayNot("update", "", "nodes", "", "node-a"),
			mayNot("create", "", "events", namespace, ""),
			mayNot("create", "audio.liken.sh", "sinks", "", ""),
		},
	},
}

// checkRBAC asks the real API server's authorizer, with a
// SubjectAccessReview for each ServiceAccount of base dir as its pods
// authenticate (its user and groups), every entry of its matrix: each
// right it needs is granted and each on the list of what it must not do is
// refused. checkSecrets walks every verb on Secrets beside it.
func checkRBAC(t *testing.T, c *harness.Cluster, dir string) {
	ctx := t.Context()
	accounts := rbacMatrix[dir]
	if len(accounts) == 0 {
		t.Fatalf("no RBAC matrix for deploy/%s", dir)
	}
	for sa, matrix := range accounts {
		user := "system:serviceaccount:" + namespace + ":" + sa
		for _, a := range matrix {
			group, resource, sub := a.group, a.resource, ""
			for i := range len(resource) {
				if resource[i] == '/' {
					resource, sub = resource[:i], resource[i+1:]
					break
				}
			}
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   user,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: a.ns, Verb: a.verb, Group: group, Resource: resource, Subresource: sub, Name: a.name,
				},
			}}
			got, err := c.Client().AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Allowed != a.allowed {
				where := "cluster-wide"
				if a.ns != "" {
					where = "in " + a.ns
				}
				if a.name != "" {
					where += fmt.Sprintf(" (%s)", a.name)
				}
				t.Errorf("%s may %s %s.%s %s: %v, want %v (%s)", sa, a.verb, a.resource, a.group, where, got.Status.Allowed, a.allowed, got.Status.Reason)
			}
		}
	}
}
