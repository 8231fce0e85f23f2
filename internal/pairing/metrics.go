// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the controller's Prometheus series.
type metrics struct {
	connected, claimed, battery *prometheus.GaugeVec
	reconcile                   prometheus.Histogram
	errors                      prometheus.Counter
	outcomes                    *prometheus.CounterVec
	previousBonds               *prometheus.GaugeVec
	a2dpRepairs                 *prometheus.CounterVec
}

// newMetrics registers with r (nil: the series exist and go nowhere):
//
//	bluetooth_peripheral_connected{peripheral}      1 while the link is up
//	bluetooth_peripheral_claimed{peripheral}        1 while a prepared claim holds it
//	bluetooth_peripheral_battery_percent{peripheral} its charge, 0 to 100
//	bluetooth_reconcile_duration_seconds            one pass of the pairing API
//	bluetooth_reconcile_errors_total                objects a pass failed to write or act on
//	bluetooth_pairing_outcomes_total{outcome}       Paired, Failed, Expired
//	bluetooth_adapter_previous_radio_bonds{previous} bond Secrets of an earlier radio of this node, while this one holds none
//	bluetooth_peripheral_a2dp_repairs_total{method,result} attempts to bring a connected speaker's A2DP back
func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		connected: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bluetooth_peripheral_connected",
			Help: "1 while the Peripheral's link is up."}, []string{"peripheral"}),
		claimed: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bluetooth_peripheral_claimed",
			Help: "1 while a prepared ResourceClaim holds the Peripheral."}, []string{"peripheral"}),
		battery: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bluetooth_peripheral_battery_percent",
			Help: "The Peripheral's battery charge in percent, where it reports one."}, []string{"peripheral"}),
		reconcile: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bluetooth_reconcile_duration_seconds",
			Help: "Duration of one pass over Adapters, Peripherals and PairingRequests.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 8)}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "bluetooth_reconcile_errors_total",
			Help: "Objects a pass failed to write or act on."}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bluetooth_pairing_outcomes_total",
			Help: "PairingRequests finished, by phase."}, []string{"outcome"}),
		a2dpRepairs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bluetooth_peripheral_a2dp_repairs_total",
			Help: "Attempts to bring back the A2DP channel of a connected speaker that lacks it, by method (ConnectProfile, Reconnect) and result."}, []string{"method", "result"}),
		previousBonds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bluetooth_adapter_previous_radio_bonds",
			Help: "Bond Secrets of an earlier radio of this node (by its Adapter name) while the radio here holds no bonds: its devices must be paired again, or the radio given the old address."}, []string{"previous"}),
	}
	if r != nil {
		r.MustRegister(m.connected, m.claimed, m.battery, m.reconcile, m.errors, m.outcomes, m.previousBonds, m.a2dpRepairs)
	}
	return m
}
