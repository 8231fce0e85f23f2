// SPDX-License-Identifier: Apache-2.0

package audioapi

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/klog/v2"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/captureapi"
)

// followConnected watches the tapped Sink t.obj by name, from the
// resourceVersion the tap was allowed at, until ctx ends, and returns a
// channel that receives the problem once if the operator publishes the
// Sink disconnected meanwhile (see disconnected). The watch is one
// request that lasts as long as the tap (client-go's RetryWatcher opens
// it again from the last version seen when the API server closes it);
// nothing is watched between taps. A watch that is refused (an
// audio-api role without watch on sinks) or whose version expired is
// logged, and the tap goes on unwatched: the refusal at the tap's start
// still holds.
func (s *server) followConnected(ctx context.Context, t relayTarget) <-chan *captureapi.Problem {
	out := make(chan *captureapi.Problem, 1)
	logger := klog.FromContext(ctx).WithValues("sink", t.match.Name)
	res := s.cfg.Objects.Resource(audiov1.SinksResource)
	selector := fields.OneTermEqualSelector("metadata.name", t.match.Name).String()
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = selector
		return res.Watch(ctx, o)
	}}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, t.obj.GetResourceVersion(), lw)
	if err != nil {
		logger.Error(err, "Not following the tapped Sink's Connected condition")
		return out
	}
	go func() {
		defer rw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-rw.ResultChan():
				if !ok {
					return
				}
				if ev.Type == watch.Error {
					logger.Info("Not following the tapped Sink's Connected condition any more", "err", apierrors.FromObject(ev.Object))
					return
				}
				obj, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || ev.Type == watch.Deleted {
					continue
				}
				if p := disconnected(t.match, obj); p != nil {
					out <- p
					return
				}
			}
		}
	}()
	return out
}
