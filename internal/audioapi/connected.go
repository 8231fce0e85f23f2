// SPDX-License-Identifier: Apache-2.0

package audioapi

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/captureapi"
)

// reasonJackUnplugged is the reason of a Sink's Connected condition the
// audio operator sets for an analog jack that is unplugged
// (audio.ReasonJackUnplugged, which a test holds this to; the audio
// package is not imported for one string). The operator does not taint
// such an output: a consumer may still play there, and a tap of it is
// served as before.
const reasonJackUnplugged = "JackUnplugged"

// disconnected returns the ProblemDisconnected a tap of the Sink obj gets
// when the audio operator publishes it as disconnected: its Connected
// condition is False for any reason but an unplugged jack (no monitor
// behind an HDMI or DisplayPort output, a Bluetooth speaker that is not
// connected, an endpoint no longer on its node), which is where the
// operator taints its device disconnected (NoExecute). Nil for a Source,
// a Sink that is connected, and one whose status says nothing of it. A
// tap records the sink's monitor, and recording it starts the sink:
// PipeWire opens its PCM, which on HDA HDMI takes one of the card's
// shared converters, and the connected output's next open fails with
// EBUSY.
func disconnected(m captureapi.Match, obj *unstructured.Unstructured) *captureapi.Problem {
	if m.Route.Resource != captureapi.Sinks {
		return nil
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		cm, ok := c.(map[string]any)
		if !ok || cm["type"] != audiov1.ConditionConnected {
			continue
		}
		reason, _ := cm["reason"].(string)
		if cm["status"] != "False" || reason == reasonJackUnplugged {
			return nil
		}
		message, _ := cm["message"].(string)
		return captureapi.NewProblem(captureapi.ProblemDisconnected, "%s", disconnectedDetail(m.Route.Resource.Kind, m.Name, reason, message))
	}
	return nil
}

// disconnectedDetail says that the Sink name is disconnected, why (the
// condition's message and reason), and what a tap would do; short enough
// for the CLI to print whole with a long Sink name.
func disconnectedDetail(kind, name, reason, message string) string {
	why := reason
	if message != "" {
		why = message + " (" + reason + ")"
	}
	return fmt.Sprintf("%s %q is disconnected: %s; a tap would open its PCM and could take the converter a connected output of its card needs.",
		kind, name, why)
}
