// SPDX-License-Identifier: Apache-2.0

// Package metricsserver serves an operator's Prometheus registry over HTTP
// on the address its manifest names (METRICS_ADDRESS in deploy/audio/operator.yaml).
// An empty address is the cluster owner's opt-out: nothing listens.
package metricsserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
)

// Listen opens addr (host:port, e.g. ":9200"); an empty addr returns a nil
// listener and no error. Listening before serving lets a caller fail at
// start-up on a taken port instead of later in a goroutine.
func Listen(addr string) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %q: %w", addr, err)
	}
	return l, nil
}

// Serve answers /metrics from g on l until ctx ends, then shuts down within
// five seconds. A nil l returns at once. Scrapes read only the in-memory
// registry, never hardware.
func Serve(ctx context.Context, l net.Listener, g prometheus.Gatherer) error {
	if l == nil {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", Handler(g))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	err := srv.Serve(l)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("metrics: %w", err)
}

// Handler answers a scrape of g in the Prometheus exposition formats; a
// collector's error drops its series and keeps the rest. Serve mounts it
// at /metrics; a server with a listener of its own (TLS) mounts it there
// too.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// NewRegistry returns a registry holding the Go runtime's and the
// process's collectors, the series every liken process serves.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Start is what an operator's main does: a registry holding the Go
// runtime's and the process's collectors, served on addr (Listen, then
// Serve in the background until ctx ends; a serving error is logged). It
// returns the registry for the operator's own metrics. Errors: addr cannot
// be listened on.
func Start(ctx context.Context, addr string) (*prometheus.Registry, error) {
	reg := NewRegistry()
	l, err := Listen(addr)
	if err != nil {
		return nil, err
	}
	go func() {
		if err := Serve(ctx, l, reg); err != nil {
			klog.FromContext(ctx).Error(err, "Metrics listener stopped")
		}
	}()
	return reg, nil
}
