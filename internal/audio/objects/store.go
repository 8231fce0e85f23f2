// SPDX-License-Identifier: Apache-2.0

package objects

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
)

// Kind is one of the two resources: "Sink" or "Source".
type Kind struct {
	Name     string
	Resource schema.GroupVersionResource
}

// The two kinds.
var (
	SinkKind   = Kind{Name: "Sink", Resource: audiov1.SinksResource}
	SourceKind = Kind{Name: "Source", Resource: audiov1.SourcesResource}
)

// Options are a Store's collaborators.
type Options struct {
	// Client reaches the API server (required).
	Client dynamic.Interface
	// Node is this node's name; the store follows only objects whose
	// status.node names it (required).
	Node string
	// Mine says whether a name is of this node's form, one its operator
	// could form for an endpoint of its own: a new object of such a name
	// that no operator has written yet wakes a pass (see Unclaimed). Nil:
	// none does.
	Mine func(name string) bool
	// OnWatchRestart is called with the kind's name each time a list or
	// watch fails, just before the informer opens it again
	// (audio_watch_restarts_total).
	OnWatchRestart func(kind string)
}

// Store follows this node's Sinks and Sources and writes their status.
// Its methods are safe for concurrent use.
type Store struct {
	opts      Options
	informers map[string]cache.SharedIndexInformer
	// unclaimed follow, by kind, the objects whose status names no node
	// (made by hand, or just created): see Unclaimed.
	unclaimed map[string]cache.SharedIndexInformer
	wake      chan struct{}
}

// New makes a Store; Start runs it.
func New(opts Options) (*Store, error) {
	if opts.Client == nil || opts.Node == "" {
		return nil, errors.New("objects: a client and a node name are required")
	}
	s := &Store{opts: opts, informers: map[string]cache.SharedIndexInformer{}, unclaimed: map[string]cache.SharedIndexInformer{},
		wake: make(chan struct{}, 1)}
	for _, k := range []Kind{SinkKind, SourceKind} {
		s.informers[k.Name] = s.informer(k, opts.Node, func(oldObj, newObj any) {
			if specChanged(oldObj, newObj) {
				s.poke()
			}
		})
		// Only a new unclaimed object of this node's form wakes a pass:
		// any other is some other node's, and one that leaves (claimed
		// by its node's operator) arrives in that operator's own
		// informer.
		s.unclaimed[k.Name] = s.informer(k, "", nil)
	}
	return s, nil
}

// informer makes the informer of kind's objects whose status.node is
// node ("" matches an object with no status.node: the API server reads
// a selectable field that is not set as empty). With update (which sees
// every update) adding and deleting one wakes a pass; without, adding
// one of a name Options.Mine takes for this node's does.
func (s *Store) informer(k Kind, node string, update func(oldObj, newObj any)) cache.SharedIndexInformer {
	opts := s.opts
	selector := fields.OneTermEqualSelector("status.node", node).String()
	inf := dynamicinformer.NewFilteredDynamicInformer(opts.Client, k.Resource, "", 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = selector }).Informer()
	// The stores hold what passes read, not what the API server's field
	// managers wrote.
	_ = inf.SetTransform(func(obj any) (any, error) {
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return obj, nil
	})
	kind := k.Name
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if opts.OnWatchRestart != nil {
			opts.OnWatchRestart(kind)
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	h := cache.ResourceEventHandlerFuncs{AddFunc: func(any) { s.poke() }, UpdateFunc: update}
	if update != nil {
		h.DeleteFunc = func(any) { s.poke() }
	} else {
		h.AddFunc = func(obj any) {
			if m, ok := obj.(metav1.Object); ok && opts.Mine != nil && opts.Mine(m.GetName()) {
				s.poke()
			}
		}
	}
	_, _ = inf.AddEventHandler(h)
	return inf
}

// specChanged says whether an update is one a person made: the generation
// (spec), the deletion mark or the UID changed. The operator's own status
// writes change none of them, so they wake no pass.
func specChanged(oldObj, newObj any) bool {
	o, ok1 := oldObj.(metav1.Object)
	n, ok2 := newObj.(metav1.Object)
	if !ok1 || !ok2 {
		return true
	}
	return o.GetGeneration() != n.GetGeneration() || o.GetUID() != n.GetUID() ||
		(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil)
}

func (s *Store) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Wake receives when a Sink or Source of this node was added, deleted or
// had its spec changed: a pass should run.
func (s *Store) Wake() <-chan struct{} { return s.wake }

// watchDelay is the least time between a store's first read of a kind
// and its informer's first watch; each informer waits between it and
// twice it (wait.Jitter), so that a fleet started at once spreads its
// watches.
//
// An API server creates the watch cache of a custom resource when the
// first request for it arrives, and until the cache has read the
// resource from etcd it answers watches and selector lists with 429
// "storage is (re)initializing" (k8s.io/apiserver
// pkg/storage/cacher: Cacher.Watch, Cacher.GetList; KEP-4568). A cold
// start of a fleet after the API server started sends its watches into
// that window. A list with a limit and no selector is served from etcd
// while the cache is not ready, so the store sends one of those first,
// and watches a second or two later, when the cache is long filled.
const watchDelay = time.Second

// Start runs the informers until ctx ends and waits (bounded by timeout)
// for their first lists; a timeout of 0 returns at once, which is what the
// operator does: its devices must not wait for its objects. Each informer
// starts after one list of a single object of its kind (which has the API
// server fill its watch cache) and between watchDelay and twice that
// later. Until the first lists arrive (never, without the CRDs or the
// access), passes read what the store lacks from the API server. The
// error says the lists did not arrive in time; the store runs on and
// catches up.
func (s *Store) Start(ctx context.Context, timeout time.Duration) error {
	for _, k := range []Kind{SinkKind, SourceKind} {
		infs := []cache.SharedIndexInformer{s.informers[k.Name], s.unclaimed[k.Name]}
		go func() {
			s.warm(ctx, k)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait.Jitter(watchDelay, 1)):
			}
			for _, inf := range infs[1:] {
				go inf.RunWithContext(ctx)
			}
			infs[0].RunWithContext(ctx)
		}()
	}
	if timeout <= 0 {
		return nil
	}
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !cache.WaitForCacheSync(wait.Done(), s.Synced) {
		return fmt.Errorf("objects: Sinks and Sources not listed within %s", timeout)
	}
	return nil
}

// warm lists one object of kind, whichever node's: served from etcd
// while the API server's watch cache of the kind is not ready, and the
// request that has the API server create it. What it answers is not
// used, and a failure is the informer's to report.
func (s *Store) warm(ctx context.Context, k Kind) {
	call, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	_, _ = s.opts.Client.Resource(k.Resource).List(call, metav1.ListOptions{Limit: 1})
}

// Synced reports whether every informer has its first list.
func (s *Store) Synced() bool {
	for _, infs := range []map[string]cache.SharedIndexInformer{s.informers, s.unclaimed} {
		for _, inf := range infs {
			if !inf.HasSynced() {
				return false
			}
		}
	}
	return true
}

// Names lists the names of this node's objects of kind in the store.
func (s *Store) Names(k Kind) []string {
	return s.informers[k.Name].GetStore().ListKeys()
}

// Sink returns the Sink name: from the store, else from the API server
// (the store holds only objects whose status names this node, so a Sink
// a person created before the operator wrote its status is read there).
// ok is false when there is no such Sink. Errors: the API server did not
// answer, or the object does not convert (the error names it); with a
// *DecodeError ok is true and the Sink is returned less the fields that
// do not convert.
func (s *Store) Sink(ctx context.Context, name string) (*audiov1.Sink, bool, error) {
	var out audiov1.Sink
	ok, err := s.get(ctx, SinkKind, name, &out)
	return &out, ok, err
}

// Source is Sink for Sources.
func (s *Store) Source(ctx context.Context, name string) (*audiov1.Source, bool, error) {
	var out audiov1.Source
	ok, err := s.get(ctx, SourceKind, name, &out)
	return &out, ok, err
}

func (s *Store) get(ctx context.Context, k Kind, name string, into any) (bool, error) {
	obj, ok, err := s.informers[k.Name].GetStore().GetByKey(name)
	if err != nil {
		return false, err
	}
	if !ok {
		call, cancel := context.WithTimeout(ctx, RequestTimeout)
		defer cancel()
		got, err := s.opts.Client.Resource(k.Resource).Get(call, name, metav1.GetOptions{})
		if isNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("%s %s: %w", k.Name, name, err)
		}
		obj = got
	}
	u, isU := obj.(*unstructured.Unstructured)
	if !isU {
		return false, fmt.Errorf("%s %s: unexpected %T in the store", k.Name, name, obj)
	}
	if err := decode(k, u, into); err != nil {
		var derr *DecodeError
		return errors.As(err, &derr), err
	}
	return true, nil
}

// isNotFound, isConflict shorten the API error checks.
var (
	isNotFound = apierrors.IsNotFound
	isConflict = apierrors.IsConflict
)

// logger is the store's logger from ctx.
func logger(ctx context.Context) klog.Logger { return klog.FromContext(ctx).WithName("objects") }

var isAlreadyExists = apierrors.IsAlreadyExists
