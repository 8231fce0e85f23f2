// SPDX-License-Identifier: Apache-2.0

package metricsserver

import "github.com/prometheus/client_golang/prometheus"

// BuildInfo registers liken_build_info{component,version} = 1 with reg,
// the series every liken process serves to say what runs.
func BuildInfo(reg prometheus.Registerer, component, version string) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "liken_build_info",
		Help:        "1, labelled with the component and its release.",
		ConstLabels: prometheus.Labels{"component": component, "version": version},
	})
	g.Set(1)
	reg.MustRegister(g)
}
