// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ApplyAdmissionPoliciesFile creates every ValidatingAdmissionPolicy and
// ValidatingAdmissionPolicyBinding in a multi-document YAML file, such as
// deploy/audio/admissionpolicy.yaml, so the demo refuses what a deployed
// cluster refuses. The path is relative to the module root unless
// absolute; other kinds in the file are ignored and an object that exists
// already is left as it is. It returns once the API server has
// type-checked each policy (its status observes its generation), the
// sign that the policy plugin has loaded it; an error names the file and
// document that failed to parse or the object the server refused.
func (c *Cluster) ApplyAdmissionPoliciesFile(ctx context.Context, path string) error {
	api := c.client.AdmissionregistrationV1()
	var policies []string
	err := eachDeployDocument(path, func(kind string, decode func(any) error) error {
		switch kind {
		case "ValidatingAdmissionPolicy":
			var p admissionv1.ValidatingAdmissionPolicy
			if err := decode(&p); err != nil {
				return err
			}
			if _, err := api.ValidatingAdmissionPolicies().Create(ctx, &p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("harness: ValidatingAdmissionPolicy %s: %w", p.Name, err)
			}
			policies = append(policies, p.Name)
		case "ValidatingAdmissionPolicyBinding":
			var b admissionv1.ValidatingAdmissionPolicyBinding
			if err := decode(&b); err != nil {
				return err
			}
			if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, &b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("harness: ValidatingAdmissionPolicyBinding %s: %w", b.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, name := range policies {
		err := c.poll(ctx, "ValidatingAdmissionPolicy "+name+" type-checked", func(ctx context.Context) (bool, string, error) {
			p, err := api.ValidatingAdmissionPolicies().Get(ctx, name, getOpts)
			if err != nil {
				return false, err.Error(), nil
			}
			return p.Status.ObservedGeneration == p.Generation && p.Status.TypeChecking != nil,
				fmt.Sprintf("status %+v at generation %d", p.Status, p.Generation), nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
