// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the operator's own Prometheus series.
// Every value is set by a pass and read by a scrape from memory: a scrape
// touches no card, PipeWire or API server. An endpoint that goes away
// keeps its last values, since unknown is not disconnected.
type metrics struct {
	connected, ready, claimed *prometheus.GaugeVec     // by endpoint
	reconcile                 *prometheus.HistogramVec // by kind
	reconcileErrors           *prometheus.CounterVec   // by kind
	watchRestarts             *prometheus.CounterVec   // by kind
	observationValid          *prometheus.GaugeVec     // by source
	observationLast           *prometheus.GaugeVec     // by source
	controlFailures           *prometheus.CounterVec   // by operation
	untrusted                 *prometheus.CounterVec   // by endpoint
	monitorRestarts           *prometheus.CounterVec   // by reason
	passes                    *prometheus.CounterVec   // by trigger
	busyRetries               *prometheus.CounterVec   // by endpoint and how
	// graphAt is when the graph was last known current (Unix
	// nanoseconds; 0: never), which audio_observation_age_seconds reads
	// at each scrape.
	graphAt atomic.Int64
}

// Observation sources and control operations, the label values.
const (
	sourcePipeWire = "pipewire"
	// Reasons the graph monitor (pw-dump -m) is started again.
	restartStale   = "stale"
	restartEnded   = "ended"
	restartGarbled = "garbled"
	// What woke a pass.
	triggerGraph     = "graph"    // a batch of the graph monitor
	triggerNoGraph   = "no-graph" // PipeWire went away or never answered
	triggerEvent     = "event"    // a control event, a claim, a speaker, the record of declared nodes
	triggerELD       = "eld"      // an ELD that changed with no control event
	triggerObjects   = "objects"  // a Sink or Source added, changed or deleted
	triggerBackstop  = "backstop" // the periodic pass
	triggerStale     = "stale"    // the graph monitor found stale
	operationVolume  = "volume"
	operationControl = "control"
	// operationChannelMap: a card's Playback Channel Map set for a
	// surround layout was refused or read back different.
	operationChannelMap = "channel-map"
)

func newMetrics(reg prometheus.Registerer) *metrics {
	endpoint := []string{"endpoint"}
	m := &metrics{
		connected: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "audio_endpoint_connected",
			Help: "1 while the endpoint's physical link is up (monitor present, jack plugged, USB listed)."}, endpoint),
		ready: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "audio_endpoint_ready",
			Help: "1 while PipeWire holds a node for the endpoint."}, endpoint),
		claimed: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "audio_endpoint_claimed",
			Help: "1 while a prepared ResourceClaim holds the endpoint."}, endpoint),
		reconcile: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "audio_reconcile_duration_seconds",
			Help: "Time to reconcile one Sink or Source.", Buckets: prometheus.DefBuckets}, []string{"kind"}),
		reconcileErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "audio_reconcile_errors_total",
			Help: "Sink or Source reconciles that failed."}, []string{"kind"}),
		watchRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "audio_watch_restarts_total",
			Help: "Watches of Sinks or Sources reopened after a failure."}, []string{"kind"}),
		observationValid: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "audio_observation_valid",
			Help: "1 when the last read of the source succeeded."}, []string{"source"}),
		observationLast: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "audio_observation_last_success_timestamp_seconds",
			Help: "Unix time of the source's last successful read."}, []string{"source"}),
		controlFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "audio_control_failures_total",
			Help: "Hardware writes (volume, mixer control, channel map) that failed."}, []string{"operation"}),
		untrusted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "audio_untrusted_nodes_total",
			Help: "PipeWire nodes seen posing as a declared node (its node.name or liken.audio.* properties, another serial) and ignored; endpoint is empty for a name no endpoint has."}, endpoint),
		monitorRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "audio_graph_monitor_restarts_total",
			Help: "Times the PipeWire graph monitor (pw-dump -m) was started again: stale (it printed nothing while PipeWire answered, and was killed), ended (it exited: PipeWire went away), garbled (its output did not parse)."}, []string{"reason"}),
	}
	m.passes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "audio_passes_total",
		Help: "Reconcile passes by what woke them: graph (a pw-dump -m batch), no-graph, event (a control event, a claim prepared or unprepared, a speaker, the record of declared nodes), eld (an ELD changed with no control event), objects, backstop, stale."}, []string{"trigger"})
	m.busyRetries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "audio_device_busy_retries_total",
		Help: "Retries of an output whose PCM PipeWire could not open: how=suspend (its node was in error, e.g. EBUSY, and was suspended so that its stream opens the device again), how=create (PipeWire held no node for it, and the claim gate asked the adapter factory for it again)."}, []string{"endpoint", "how"})
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "audio_observation_age_seconds",
		Help:        "Seconds since the source was last known current (for pipewire: a batch of pw-dump -m, or a probe it answered); -1 before the first.",
		ConstLabels: prometheus.Labels{"source": sourcePipeWire}}, m.graphAge)
	if reg != nil {
		reg.MustRegister(m.connected, m.ready, m.claimed, m.reconcile, m.reconcileErrors, m.watchRestarts,
			m.observationValid, m.observationLast, m.controlFailures, m.untrusted, m.monitorRestarts, m.passes, m.busyRetries, age)
	}
	return m
}

// observed records that source was read and found current at t (ok) or
// could not be (not ok: the last values stay, valid turns 0).
func (m *metrics) observed(source string, ok bool, t time.Time) {
	if !ok {
		m.observationValid.WithLabelValues(source).Set(0)
		return
	}
	m.observationValid.WithLabelValues(source).Set(1)
	m.observationLast.WithLabelValues(source).Set(float64(t.Unix()))
	if source == sourcePipeWire {
		m.graphAt.Store(t.UnixNano())
	}
}

// graphAge is audio_observation_age_seconds{source="pipewire"}.
func (m *metrics) graphAge() float64 {
	at := m.graphAt.Load()
	if at == 0 {
		return -1
	}
	return time.Since(time.Unix(0, at)).Seconds()
}

func gauge(v *prometheus.GaugeVec, endpoint string, on bool) {
	x := 0.0
	if on {
		x = 1
	}
	v.WithLabelValues(endpoint).Set(x)
}
