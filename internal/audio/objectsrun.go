package audio

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/audio/objects"
)

// objectsSyncWait bounds the wait for the first lists of Sinks and
// Sources; past it the operator serves anyway and catches up.
const objectsSyncWait = 30 * time.Second

// startObjects starts the Sink/Source store and the Event recorder. The
// returned function stops the recorder, flushing Events not yet sent.
func (o *operator) startObjects(ctx context.Context) (func(), error) {
	store, err := objects.New(objects.Options{Client: o.cfg.Objects, Node: o.cfg.Node,
		OnWatchRestart: func(kind string) { o.metrics.watchRestarts.WithLabelValues(kind).Inc() }})
	if err != nil {
		return nil, err
	}
	if err := store.Start(ctx, objectsSyncWait); err != nil {
		klog.FromContext(ctx).Error(err, "Sinks and Sources are read from the API server until the watch catches up")
	}
	o.store, o.objWake = store, store.Wake()
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: o.cfg.KubeClient.CoreV1().Events("")})
	o.recorder = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "audio-operator", Host: o.cfg.Node})
	return b.Shutdown, nil
}
