// SPDX-License-Identifier: Apache-2.0

package objects

import (
	"context"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
)

// Unclaimed lists the names of the objects of kind, whichever node's,
// whose status names no node and holds no condition: objects a person
// created that no operator has written yet. Read from the store's own
// informer, so it costs no request.
func (s *Store) Unclaimed(k Kind) []string {
	var out []string
	for _, obj := range s.unclaimed[k.Name].GetStore().List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || u.GetDeletionTimestamp() != nil || written(u) {
			continue
		}
		out = append(out, u.GetName())
	}
	sort.Strings(out)
	return out
}

// written says whether u's status names a node or holds a condition.
func written(u *unstructured.Unstructured) bool {
	node, _, _ := unstructured.NestedString(u.Object, "status", "node")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	return node != "" || len(conds) > 0
}

// MarkNotServed writes, once, the status of an unclaimed object (see
// Unclaimed) that this node's operator has no endpoint for: status.node
// this node, Connected and Ready False with reason NotServed and
// message. The write carries the resourceVersion the store read, so of
// two operators that both take the name for theirs one write lands; the
// other, and a write racing a person's edit or delete, is dropped
// (written is false, the error nil): the object is no longer unclaimed,
// or comes back through the informer. Errors: the API server refused the
// write (the message names the object).
func (s *Store) MarkNotServed(ctx context.Context, k Kind, name, message string) (bool, error) {
	obj, ok, _ := s.unclaimed[k.Name].GetStore().GetByKey(name)
	u, isU := obj.(*unstructured.Unstructured)
	if !ok || !isU || written(u) {
		return false, nil
	}
	now := metav1.NewTime(time.Now())
	st := audiov1.EndpointStatus{Node: s.opts.Node}
	for _, t := range []string{audiov1.ConditionConnected, audiov1.ConditionReady} {
		st.Conditions = append(st.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionFalse,
			Reason: audiov1.ReasonNotServed, Message: message, ObservedGeneration: u.GetGeneration(), LastTransitionTime: now})
	}
	next, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return false, fmt.Errorf("%s %s: %w", k.Name, name, err)
	}
	upd := u.DeepCopy()
	upd.Object["status"] = next
	call, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	_, err = s.opts.Client.Resource(k.Resource).UpdateStatus(call, upd, metav1.UpdateOptions{FieldManager: fieldManager})
	switch {
	case err == nil:
		return true, nil
	case isConflict(err), isNotFound(err):
		logger(ctx).V(2).Info("Not-served mark raced; left to the next read", "kind", k.Name, "name", name, "reason", err)
		return false, nil
	}
	return false, fmt.Errorf("%s %s: status write: %w", k.Name, name, err)
}
