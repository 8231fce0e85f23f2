// SPDX-License-Identifier: Apache-2.0

package audioapi

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are audio-api's series (besides liken_build_info, which the
// caller registers):
//
//	audio_api_requests_total{route,method,status}   requests answered; route is the RFC 6570 template
//	audio_api_request_seconds{route}                time to the response headers (histogram)
//	audio_api_streams_active{aspect}                taps being relayed now
//	audio_api_certificate_expiry_seconds            seconds until the nearest of the CA and leaves expires
//	audio_api_upstream_failures_total{reason}       relays that failed: token, connect, certificate, timeout, upstream
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	streams  *prometheus.GaugeVec
	failures *prometheus.CounterVec
	reg      prometheus.Registerer
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "audio_api_requests_total", Help: "Requests answered, by route template, method and status code.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "audio_api_request_seconds", Help: "Seconds from a request to its response headers, by route template.",
			Buckets: []float64{.005, .01, .025, .05, .1, .2, .5, 1, 2.5, 5, 10, 30, 75},
		}, []string{"route"}),
		streams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "audio_api_streams_active", Help: "Taps being relayed now, by aspect.",
		}, []string{"aspect"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "audio_api_upstream_failures_total", Help: "Relays to a capture container that failed, by reason.",
		}, []string{"reason"}),
		reg: reg,
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.latency, m.streams, m.failures)
	}
	return m
}

// expiry registers the certificate expiry gauge, read at scrape time.
func (m *metrics) expiry(notAfter func() time.Time) {
	if m.reg == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "audio_api_certificate_expiry_seconds",
		Help: "Seconds until the nearest expiry among audio-api's CA, its serving leaf and the capture leaf.",
	}, func() float64 { return time.Until(notAfter()).Seconds() }))
}

func (m *metrics) observe(rq *request, method string) {
	status := rq.status
	if status == 0 {
		status = 499 // the client left before any answer
	}
	switch method {
	case "GET", "HEAD", "OPTIONS":
	default:
		method = "other" // any string a client sends would be a new series
	}
	m.requests.WithLabelValues(rq.template, method, strconv.Itoa(status)).Inc()
	if rq.headers > 0 {
		m.latency.WithLabelValues(rq.template).Observe(rq.headers.Seconds())
	}
}

func (m *metrics) failure(reason string) { m.failures.WithLabelValues(reason).Inc() }
