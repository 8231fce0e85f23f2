// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the core's Prometheus series, all labelled with the driver.
type metrics struct {
	prepareTotal        *prometheus.CounterVec // result: success|error, per claim
	prepareSeconds      prometheus.Observer
	unprepareTotal      *prometheus.CounterVec
	unprepareSeconds    prometheus.Observer
	sliceWrites         prometheus.Counter
	sliceUnchanged      prometheus.Counter
	sliceErrors         prometheus.Counter
	publishedDevices    prometheus.Gauge
	taintedDevices      prometheus.Gauge
	preparedClaims      prometheus.Gauge
	backgroundErrors    *prometheus.CounterVec // fatal: true|false
	registered          prometheus.Gauge
	registrationRetries prometheus.Counter
	registrationProblem *prometheus.GaugeVec   // reason: one of registrationReasons
	statusWrites        *prometheus.CounterVec // result: success|error
	droppedFeatures     *prometheus.GaugeVec   // feature: the gate the API server runs without
}

// newMetrics registers the series on reg. A nil reg gets a private registry,
// so that tests and benchmarks starting several drivers do not collide.
func newMetrics(reg prometheus.Registerer, driver string) *metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	constLabels := prometheus.Labels{"driver": driver}
	// Latency buckets from 1 ms to about 8 s: a prepare is a few file writes
	// and fsyncs, unless an operator's own prepare step talks to a daemon.
	buckets := prometheus.ExponentialBuckets(0.001, 2, 14)
	m := &metrics{
		prepareTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "liken_dra_prepare_claims_total", Help: "Claims the kubelet asked this driver to prepare, by result.", ConstLabels: constLabels,
		}, []string{"result"}),
		unprepareTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "liken_dra_unprepare_claims_total", Help: "Claims the kubelet asked this driver to unprepare, by result.", ConstLabels: constLabels,
		}, []string{"result"}),
		sliceWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "liken_dra_resourceslice_writes_total", Help: "Device sets handed to the ResourceSlice controller because their content changed.", ConstLabels: constLabels,
		}),
		sliceUnchanged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "liken_dra_resourceslice_unchanged_total", Help: "Settled device sets not written because they equal the published one.", ConstLabels: constLabels,
		}),
		sliceErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "liken_dra_resourceslice_errors_total", Help: "Device sets that could not be handed to the ResourceSlice controller.", ConstLabels: constLabels,
		}),
		publishedDevices: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "liken_dra_published_devices", Help: "Devices in the last published pool.", ConstLabels: constLabels,
		}),
		taintedDevices: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "liken_dra_tainted_devices", Help: "Published devices carrying a NoSchedule or NoExecute taint.", ConstLabels: constLabels,
		}),
		preparedClaims: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "liken_dra_prepared_claims", Help: "Claims recorded as prepared in the checkpoint.", ConstLabels: constLabels,
		}),
		backgroundErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "liken_dra_background_errors_total", Help: "Errors from background work such as slice publishing, by whether they were fatal.", ConstLabels: constLabels,
		}, []string{"fatal"}),
		registered: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "liken_dra_registered", Help: "1 while the kubelet has acknowledged this plugin's registration, else 0.", ConstLabels: constLabels,
		}),
		registrationRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "liken_dra_registration_retries_total", Help: "Times the plugin asked the kubelet to register it again after a refusal or no answer.", ConstLabels: constLabels,
		}),
		registrationProblem: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "liken_dra_registration_problem", Help: "1 for the reason the kubelet has not registered this plugin (KubeletWithoutDRA, KubeletDRAVersion, Refused, Unacknowledged, NoKubeletAsked), 0 for the others; all 0 once registered.", ConstLabels: constLabels,
		}, []string{"reason"}),
		statusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "liken_dra_claim_status_writes_total", Help: "Writes of this driver's entries in a claim's status.devices (server-side apply), by result.", ConstLabels: constLabels,
		}, []string{"result"}),
		droppedFeatures: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "liken_dra_api_features_missing", Help: "1 for each feature gate whose fields the API server dropped from this driver's ResourceSlice.", ConstLabels: constLabels,
		}, []string{"feature"}),
	}
	prepareSeconds := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "liken_dra_prepare_duration_seconds", Help: "Time to prepare one claim, checkpoint and CDI writes included.", ConstLabels: constLabels, Buckets: buckets,
	})
	unprepareSeconds := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "liken_dra_unprepare_duration_seconds", Help: "Time to unprepare one claim.", ConstLabels: constLabels, Buckets: buckets,
	})
	m.prepareSeconds, m.unprepareSeconds = prepareSeconds, unprepareSeconds
	reg.MustRegister(m.prepareTotal, prepareSeconds, m.unprepareTotal, unprepareSeconds,
		m.sliceWrites, m.sliceUnchanged, m.sliceErrors, m.publishedDevices, m.taintedDevices,
		m.preparedClaims, m.backgroundErrors, m.registered, m.registrationRetries, m.registrationProblem,
		m.statusWrites, m.droppedFeatures)
	m.setRegistrationProblem("")
	return m
}

// setRegistrationProblem sets liken_dra_registration_problem to 1 for
// reason and 0 for every other one; "" zeroes them all.
func (m *metrics) setRegistrationProblem(reason string) {
	for _, r := range registrationReasons {
		v := 0.0
		if r == reason {
			v = 1
		}
		m.registrationProblem.WithLabelValues(r).Set(v)
	}
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "success"
}
