// SPDX-License-Identifier: Apache-2.0

package metricsserver

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/liken-sh/operators/test/poll"
)

func TestServe(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "liken_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Add(3)
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- Serve(ctx, l, reg) }()
	resp, err := http.Get("http://" + l.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "liken_test_total 3") {
		t.Fatalf("scrape lacks the counter:\n%s", body)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

func TestEmptyAddressServesNothing(t *testing.T) {
	l, err := Listen("")
	if l != nil || err != nil {
		t.Fatalf("empty address: %v, %v", l, err)
	}
	if err := Serve(context.Background(), nil, prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen("256.0.0.1:bad"); err == nil || !strings.Contains(err.Error(), "256.0.0.1:bad") {
		t.Fatalf("bad address: %v", err)
	}
}

func TestStartServesTheRuntime(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	reg, err := Start(ctx, addr)
	if err != nil || reg == nil {
		t.Fatalf("Start: %v", err)
	}
	var body []byte
	poll.WaitFor(t, ctx, "a scrape of "+addr, 30*time.Second, func() (bool, string) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		return true, ""
	})
	if !strings.Contains(string(body), "go_goroutines") || !strings.Contains(string(body), "process_resident_memory_bytes") {
		t.Fatalf("scrape lacks the runtime's series:\n%.300s", body)
	}
	if _, err := Start(ctx, addr); err == nil {
		t.Fatal("a taken port was accepted")
	}
}
