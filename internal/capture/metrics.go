// SPDX-License-Identifier: Apache-2.0

package capture

import "github.com/prometheus/client_golang/prometheus"

// Failure reasons of audio_capture_failures_total.
const (
	reasonConnect     = "connect"      // PipeWire or pw-record did not answer
	reasonTarget      = "target"       // no node for the object
	reasonWrongTarget = "wrong-target" // the stream linked elsewhere, or not at all
	reasonEncoder     = "encoder"      // the encoder failed
	reasonLimit       = "limit"        // every tap was in use
	reasonCertificate = "certificate"  // a leaf in the Secret volume was refused
)

// metrics are the container's series; aspect is the route's
// resource/subresource ("sinks/audio"), format the format's name.
type metrics struct {
	ready    prometheus.Gauge
	bytes    *prometheus.CounterVec
	seconds  *prometheus.CounterVec
	active   *prometheus.GaugeVec
	failures *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		ready: prometheus.NewGauge(prometheus.GaugeOpts{Name: "audio_capture_ready",
			Help: "1 while the container serves the leaf audio-api minted, 0 while it serves its own certificate."}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "audio_capture_bytes_total",
			Help: "Body bytes sent by taps."}, []string{"aspect", "format"}),
		seconds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "audio_capture_seconds_total",
			Help: "Seconds taps streamed, from their headers to their end."}, []string{"aspect", "format"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "audio_captures_active",
			Help: "Taps streaming now."}, []string{"aspect"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "audio_capture_failures_total",
			Help: "Taps that failed, and refused leaves, by reason."}, []string{"reason"}),
	}
	reg.MustRegister(m.ready, m.bytes, m.seconds, m.active, m.failures)
	for _, r := range []string{reasonConnect, reasonTarget, reasonWrongTarget, reasonEncoder, reasonLimit, reasonCertificate} {
		m.failures.WithLabelValues(r)
	}
	return m
}
