// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/audioapi"
	"github.com/liken-sh/operators/internal/kubeclient"
	"github.com/liken-sh/operators/internal/metricsserver"
	"github.com/liken-sh/operators/internal/procmem"
)

// runAPI is `audio-operator api`, the audio-api Deployment
// (deploy/audio/api.yaml). Environment: POD_NAMESPACE (required: its
// Secrets, its ConfigMap, the audio operator's pods), API_ADDRESS
// (default :8443, HTTPS), METRICS_ADDRESS (default :9200, plain HTTP
// /metrics, /healthz, /readyz; empty serves none), CAPTURE_TOKEN_FILE
// (the projected token for the capture containers) and PUBLIC_BASE
// (optional, the origin the OpenAPI document names).
func runAPI(ctx context.Context, p paths) error {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		return errors.New("POD_NAMESPACE must be set (deploy/audio/api.yaml sets it from the downward API)")
	}
	procmem.Fit(ctx) // the Go memory limit from the container's; start-up memory given back
	addr := envOr("API_ADDRESS", ":8443")
	metricsAddr, ok := os.LookupEnv("METRICS_ADDRESS")
	if !ok {
		metricsAddr = ":9200"
	}
	rc, err := kubeclient.Config(p.kubeconfig, "audio-api")
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	reg := metricsserver.NewRegistry()
	metricsserver.BuildInfo(reg, "audio-api", version)
	ml, err := metricsserver.Listen(metricsAddr)
	if err != nil {
		return err
	}
	var ready atomic.Bool
	if ml != nil {
		go serveProbes(ctx, ml, reg, ready.Load)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return audioapi.Serve(ctx, audioapi.Config{
		Client: client, Objects: dyn, Namespace: ns,
		CaptureTokenFile: os.Getenv("CAPTURE_TOKEN_FILE"), PublicBase: os.Getenv("PUBLIC_BASE"),
		Version: version, Registerer: reg, Ready: func() { ready.Store(true) },
	}, lis)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// serveProbes answers /metrics, /healthz (ok while the process serves)
// and /readyz (ok once audio-api serves, 503 before) on l until ctx ends:
// the probes deploy/audio/api.yaml's kubelet reads, over plain HTTP.
func serveProbes(ctx context.Context, l net.Listener, reg prometheus.Gatherer, ready func() bool) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", metricsserver.Handler(reg))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "not ready: the certificates or the pod informer are not settled yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(l); err != nil && err != http.ErrServerClosed {
		klog.FromContext(ctx).Error(err, "Metrics listener stopped")
	}
}
