// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/liken-sh/operators/internal/audio/objects"
)

// startObjects starts the Sink/Source store and the Event recorder. The
// returned function stops the recorder, flushing Events not yet sent.
func (o *operator) startObjects(ctx context.Context) (func(), error) {
	store, err := objects.New(objects.Options{Client: o.cfg.Objects, Node: o.cfg.Node,
		Mine:           func(name string) bool { return namedForNode(o.cfg.Node, name) },
		OnWatchRestart: func(kind string) { o.metrics.watchRestarts.WithLabelValues(kind).Inc() }})
	if err != nil {
		return nil, err
	}
	_ = store.Start(ctx, 0) // at once: the devices do not wait for the objects
	o.store, o.objWake = store, store.Wake()
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: o.cfg.KubeClient.CoreV1().Events("")})
	o.recorder = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "audio-operator", Host: o.cfg.Node})
	return b.Shutdown, nil
}
