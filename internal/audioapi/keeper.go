// SPDX-License-Identifier: Apache-2.0

package audioapi

import (
	"context"
	"crypto/tls"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// DefaultCertCheck is how often a [Keeper] checks the material when no
// Secret changed: an hour, far inside a leaf's renewal window.
const DefaultCertCheck = time.Hour

// Keeper keeps the TLS material current while audio-api runs: a
// [CertConfig.Sync] at start, then again every Interval and whenever one
// of its two Secrets or the CA ConfigMap changes (a watch on each by
// name, so that a person deleting the capture Secret gets a new one, and
// one deleting or editing CAConfigMap gets the CA published again, at
// once). The serving
// certificate is read per handshake, so a renewed leaf is served to new
// connections without a restart and open ones keep theirs.
type Keeper struct {
	// Config is what Sync runs with.
	Config CertConfig
	// Interval defaults to DefaultCertCheck.
	Interval time.Duration
	// OnChange, if set, is called after every Sync that succeeded, with
	// its material.
	OnChange func(*Material)

	cur  atomic.Pointer[Material]
	kick chan struct{}
}

// Start runs the first Sync, which must succeed (its error is returned),
// and then keeps the material in the background until ctx ends; a later
// failed Sync is logged and the last material stays in use.
func (k *Keeper) Start(ctx context.Context) error {
	m, err := k.Config.Sync(ctx)
	if err != nil {
		return err
	}
	k.set(m)
	k.kick = make(chan struct{}, 1)
	for _, name := range []string{ServingSecret, CaptureSecret} {
		f := informers.NewSharedInformerFactoryWithOptions(k.Config.Client, 0,
			informers.WithNamespace(k.Config.Namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
			}))
		inf := f.Core().V1().Secrets().Informer()
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { k.poke() },
			UpdateFunc: func(_, n any) { k.poke() },
			DeleteFunc: func(any) { k.poke() },
		})
		f.Start(ctx.Done())
	}
	f := informers.NewSharedInformerFactoryWithOptions(k.Config.Client, 0,
		informers.WithNamespace(k.Config.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", CAConfigMap).String()
		}))
	_, _ = f.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, n any) { k.poke() },
		DeleteFunc: func(any) { k.poke() },
	})
	f.Start(ctx.Done())
	go k.loop(ctx)
	return nil
}

func (k *Keeper) poke() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

func (k *Keeper) loop(ctx context.Context) {
	logger := klog.FromContext(ctx)
	interval := k.Interval
	if interval <= 0 {
		interval = DefaultCertCheck
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-k.kick:
		}
		m, err := k.Config.Sync(ctx)
		if err != nil {
			if ctx.Err() == nil {
				logger.Error(err, "Keeping the TLS material failed; the current certificates stay in use")
			}
			continue
		}
		k.set(m)
	}
}

func (k *Keeper) set(m *Material) {
	old := k.cur.Swap(m)
	if old == nil || old.Serving.Leaf.SerialNumber.Cmp(m.Serving.Leaf.SerialNumber) != 0 {
		klog.Background().Info("Serving certificate", "serial", m.Serving.Leaf.SerialNumber.Text(16),
			"notAfter", m.Serving.Leaf.NotAfter.UTC().Format(time.RFC3339), "managed", m.Managed)
	}
	if m.CaptureProblem != "" && (old == nil || old.CaptureProblem != m.CaptureProblem) {
		klog.Background().Info("Capture certificate left alone", "problem", m.CaptureProblem)
	}
	if k.OnChange != nil {
		k.OnChange(m)
	}
}

// Current returns the material of the last Sync that succeeded (nil
// before Start).
func (k *Keeper) Current() *Material { return k.cur.Load() }

// GetCertificate serves the current leaf; it is a tls.Config's
// GetCertificate.
func (k *Keeper) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return &k.cur.Load().Serving, nil
}
