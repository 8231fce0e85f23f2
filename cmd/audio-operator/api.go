package main

import (
	"context"
	"errors"
	"net"
	"os"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/audioapi"
	"github.com/liken-sh/operators/internal/kubeclient"
	"github.com/liken-sh/operators/internal/metricsserver"
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
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metricsserver.BuildInfo(reg, "audio-api", version)
	ml, err := metricsserver.Listen(metricsAddr)
	if err != nil {
		return err
	}
	var ready atomic.Bool
	go func() {
		if err := metricsserver.ServeProbes(ctx, ml, reg, ready.Load); err != nil {
			klog.FromContext(ctx).Error(err, "Metrics listener stopped")
		}
	}()
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
