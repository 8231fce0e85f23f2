// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"k8s.io/klog/v2"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/audio/gate"
)

// DuckDecibels is how far spec lowers the other streams on its sink
// while an announcement plays: spec.duckDecibels, or
// gate.DefaultDuckDecibels when absent; a value the schema would refuse
// (an object written past it) is held to 0 to gate.MaxDuckDecibels.
func DuckDecibels(spec audiov1.SinkSpec) int {
	if spec.DuckDecibels == nil {
		return gate.DefaultDuckDecibels
	}
	return min(max(int(*spec.DuckDecibels), 0), gate.MaxDuckDecibels)
}

// noteDucking records the ducking of the sink whose node is nodeName
// for the claim gate; writeDucking hands the gate what passes noted.
// An entry stays until its Sink says otherwise, so a pass that could not
// read every Sink leaves the others' as they were.
func (o *operator) noteDucking(nodeName string, spec audiov1.SinkSpec) {
	if nodeName == "" {
		return
	}
	if o.ducking == nil {
		o.ducking = map[string]int{}
	}
	o.ducking[nodeName] = DuckDecibels(spec)
}

// writeDucking writes gate.DuckingFile when what passes noted changed.
func (o *operator) writeDucking(logger klog.Logger) {
	if o.ducking == nil {
		return
	}
	wrote, err := gate.WriteDucking(o.cfg.runtimeDir(), o.ducking)
	switch {
	case err != nil:
		logger.Error(err, "Writing the sinks' ducking for the claim gate")
	case wrote:
		logger.Info("Sinks' ducking handed to the claim gate", "decibels", o.ducking)
	}
}
