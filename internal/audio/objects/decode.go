// SPDX-License-Identifier: Apache-2.0

package objects

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// DecodeError is the error of a Sink or Source the API server holds but
// the Go types cannot: a schema installed without the admission policies
// of deploy/audio/admissionpolicy.yaml lets through, for one, a control
// value past the int32 an int-or-string holds. The object is decoded
// all the same with each such field left out (Fields, in the order they
// were found), so what does decode is applied and one bad field does not
// make the whole object go unseen. Ref names the object, for an Event.
type DecodeError struct {
	Ref    *corev1.ObjectReference
	Fields []string // paths such as spec.controls["PCM Playback Volume"]
	Err    error    // the converter's error for the first field
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s %s: %s cannot be read, so it is ignored: %v", e.Ref.Kind, e.Ref.Name, strings.Join(e.Fields, ", "), e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Partial splits an error of Store.Sink, Store.Source, Store.ApplySink or
// Store.ApplySource for a reader that goes on without the fields the Go
// types cannot hold, as every reader of these objects does: a
// *DecodeError (the object was read, or written, less the fields it
// names) comes back as invalid with rest nil, and any other error as rest
// with invalid nil. The object returned beside a *DecodeError is usable.
func Partial(err error) (invalid *DecodeError, rest error) {
	if errors.As(err, &invalid) {
		return invalid, nil
	}
	return nil, err
}

// maxUndecodable bounds the fields left out of one object before its
// decoding is given up: a spec has a handful of fields, and a map of
// controls at most 128 entries (the schema's maxProperties).
const maxUndecodable = 130

// decode converts u into into (a pointer to a Go type of kind k). When
// the whole does not convert, it looks for the fields that do not, one
// at a time, and converts what is left. Errors: a *DecodeError when
// fields were left out, or a plain error naming the object when no single
// field is to blame (nothing is then written to into).
func decode(k Kind, u *unstructured.Unstructured, into any) error {
	err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
	if err == nil {
		return nil
	}
	derr := &DecodeError{Ref: Ref(k, u), Err: err}
	obj := runtime.DeepCopyJSON(u.Object)
	for range maxUndecodable {
		path := badField(obj, reflect.TypeOf(into).Elem())
		if path == nil {
			return fmt.Errorf("%s %s: %w", k.Name, u.GetName(), err)
		}
		derr.Fields = append(derr.Fields, spell(path))
		unstructured.RemoveNestedField(obj, path...)
		if runtime.DefaultUnstructuredConverter.FromUnstructured(obj, into) == nil {
			return derr
		}
	}
	return fmt.Errorf("%s %s: %w", k.Name, u.GetName(), err)
}

// badField is the path of the first (in key order) smallest part of obj
// that does not convert into a new value of type t on its own: a map key
// whose value fails is descended into, and a value that is no map is the
// answer. nil: every field converts alone.
func badField(obj map[string]any, t reflect.Type) []string {
	var path []string
	node := obj
	for {
		keys := make([]string, 0, len(node))
		for k := range node {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		found := false
		for _, k := range keys {
			alone := nest(append(slices.Clone(path), k), node[k])
			if runtime.DefaultUnstructuredConverter.FromUnstructured(alone, reflect.New(t).Interface()) == nil {
				continue
			}
			path, found = append(path, k), true
			sub, isMap := node[k].(map[string]any)
			if !isMap {
				return path
			}
			node = sub
			break
		}
		if !found {
			if len(path) == 0 {
				return nil
			}
			return path // a map that fails as a whole, not by one key
		}
	}
}

// nest is v placed at path in otherwise empty maps.
func nest(path []string, v any) map[string]any {
	out := map[string]any{path[len(path)-1]: v}
	for i := len(path) - 2; i >= 0; i-- {
		out = map[string]any{path[i]: out}
	}
	return out
}

// spell writes a field path as kubectl's JSONPath does: dotted names, and
// a name that is not a plain identifier quoted in brackets (Go quoting,
// so a control character in it is escaped, not printed).
func spell(path []string) string {
	var b strings.Builder
	for i, p := range path {
		if plain(p) {
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p)
			continue
		}
		b.WriteString("[" + strconv.Quote(p) + "]")
	}
	return b.String()
}

func plain(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}
