// SPDX-License-Identifier: Apache-2.0

package objects

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
)

// ErrNotServed is wrapped by the errors of a store whose API server does
// not serve Sinks and Sources (the CRDs are not installed).
var ErrNotServed = errors.New("the API server does not serve this resource (are the audio.liken.sh CRDs installed?)")

// maxWriteTries bounds the re-reads after conflicts and disappearances.
const maxWriteTries = 5

// RequestTimeout bounds each API call of a pass, so an API server that
// accepts connections and never answers delays the hardware side (volume,
// controls, the next graph change) by seconds, not without end.
const RequestTimeout = 10 * time.Second

// ApplySink makes sure the Sink name exists and its status is st: it
// creates the object (with an empty spec) when there is none, and writes
// the status subresource only when the stored status differs. A
// condition keeps its lastTransitionTime while its status stays the same;
// every condition gets the object's generation as observedGeneration.
// A conflict re-reads the object and writes again; an object deleted
// meanwhile is created again. It returns the object as stored afterwards.
// Errors: the API server refused the create or the write (the message
// names the Sink), or conflicts went on past a few re-reads; a
// *DecodeError when the status was written but the object as stored has
// fields the Go types cannot hold (see Store.Sink).
func (s *Store) ApplySink(ctx context.Context, name string, st audiov1.SinkStatus) (*audiov1.Sink, error) {
	var out audiov1.Sink
	err := s.apply(ctx, SinkKind, name, &st.EndpointStatus, &st, &out)
	return &out, err
}

// ApplySource is ApplySink for Sources.
func (s *Store) ApplySource(ctx context.Context, name string, st audiov1.EndpointStatus) (*audiov1.Source, error) {
	var out audiov1.Source
	err := s.apply(ctx, SourceKind, name, &st, &st, &out)
	return &out, err
}

// apply writes status (which embeds common, whose conditions are merged
// with the stored ones) onto the object and decodes the result into out.
func (s *Store) apply(ctx context.Context, k Kind, name string, common *audiov1.EndpointStatus, status, out any) error {
	client := s.opts.Client.Resource(k.Resource)
	want := common.Conditions
	fromStore := true
	for try := 0; try < maxWriteTries; try++ {
		cur, err := s.current(ctx, k, name, fromStore)
		if err != nil {
			return err
		}
		fromStore = false // after a conflict the store may be behind: ask the API
		var old struct {
			Status audiov1.EndpointStatus `json:"status"`
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(cur.Object, &old); err != nil {
			return fmt.Errorf("%s %s: stored status: %w", k.Name, name, err)
		}
		common.Conditions = mergeConditions(old.Status.Conditions, want, cur.GetGeneration(), time.Now())
		next, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
		if err != nil {
			return fmt.Errorf("%s %s: %w", k.Name, name, err)
		}
		stored, _, _ := unstructured.NestedMap(cur.Object, "status")
		if equality.Semantic.DeepEqual(normalize(stored), normalize(next)) {
			return decode(k, cur, out)
		}
		upd := cur.DeepCopy()
		upd.Object["status"] = next
		call, cancel := context.WithTimeout(ctx, RequestTimeout)
		written, err := client.UpdateStatus(call, upd, metav1.UpdateOptions{FieldManager: fieldManager})
		cancel()
		switch {
		case err == nil:
			return decode(k, written, out)
		case isConflict(err), isNotFound(err):
			logger(ctx).V(2).Info("Status write raced; reading again", "kind", k.Name, "name", name, "reason", err)
			continue
		default:
			return fmt.Errorf("%s %s: status write: %w", k.Name, name, err)
		}
	}
	return fmt.Errorf("%s %s: status write still conflicting after %d reads", k.Name, name, maxWriteTries)
}

// fieldManager names this operator in managedFields.
const fieldManager = "audio-operator"

// current returns the object as the store holds it (when allowed) or as
// the API server does, creating it when it does not exist.
func (s *Store) current(ctx context.Context, k Kind, name string, fromStore bool) (*unstructured.Unstructured, error) {
	if fromStore {
		if obj, ok, _ := s.informers[k.Name].GetStore().GetByKey(name); ok {
			if u, isU := obj.(*unstructured.Unstructured); isU {
				return u, nil
			}
		}
	}
	client := s.opts.Client.Resource(k.Resource)
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	got, err := client.Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return got, nil
	}
	if !isNotFound(err) {
		return nil, fmt.Errorf("%s %s: %w", k.Name, name, err)
	}
	fresh := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": audiov1.GroupVersion.String(), "kind": k.Name,
		"metadata": map[string]any{"name": name}, "spec": map[string]any{},
	}}
	created, err := client.Create(ctx, fresh, metav1.CreateOptions{FieldManager: fieldManager})
	if isAlreadyExists(err) {
		got, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", k.Name, name, err)
		}
		return got, nil
	}
	if isNotFound(err) {
		// A create answered 404: the resource itself is not served.
		return nil, fmt.Errorf("%s %s: %w", k.Name, name, ErrNotServed)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: create: %w", k.Name, name, err)
	}
	logger(ctx).Info("Created", "kind", k.Name, "name", name)
	return created, nil
}

// mergeConditions returns want with each condition's lastTransitionTime
// kept from old while its status is unchanged, and set to now otherwise.
func mergeConditions(old, want []metav1.Condition, generation int64, now time.Time) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(want))
	for _, w := range want {
		w.ObservedGeneration = generation
		w.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
		if o := meta.FindStatusCondition(old, w.Type); o != nil && o.Status == w.Status {
			w.LastTransitionTime = o.LastTransitionTime
		}
		out = append(out, w)
	}
	return out
}

// normalize makes two unstructured statuses comparable: a JSON round trip
// through the converter's number rules (the API server's int64 against a
// converted int32) would otherwise tell equal values apart.
func normalize(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return runtime.DeepCopyJSON(m)
}

// Ref is the object reference an Event about a Sink or Source takes. The
// Events land in the default namespace, since the objects have none.
func Ref(k Kind, obj metav1.Object) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		APIVersion: audiov1.GroupVersion.String(), Kind: k.Name, Name: obj.GetName(),
		UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion(),
	}
}
