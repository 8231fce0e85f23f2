// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReadiness(t *testing.T) {
	for _, c := range []struct {
		name      string
		dev       Device
		published bool
		status    metav1.ConditionStatus
		reason    string
		message   string
	}{
		{"fit", Device{Name: "a"}, true, metav1.ConditionTrue, ReasonReady, "published and fit"},
		{"informational taint only", Device{Name: "a", Taints: []Taint{{Key: "x.liken.sh/note", Effect: TaintNone}}}, true, metav1.ConditionTrue, ReasonReady, "published and fit"},
		{"gone", Device{}, false, metav1.ConditionFalse, ReasonGone, "the driver no longer publishes this device on the node"},
		{"monitor unplugged", Device{Name: "a", Problem: "monitor unplugged or off", Taints: []Taint{
			{Key: "x.liken.sh/note", Effect: TaintNone},
			{Key: "audio.liken.sh/no-monitor", Effect: TaintNoSchedule},
			{Key: "audio.liken.sh/no-sink", Effect: TaintNoSchedule},
		}}, true, metav1.ConditionFalse, "NoMonitor", "monitor unplugged or off"},
		{"tainted without a problem", Device{Name: "a", Taints: []Taint{{Key: "b.liken.sh/disconnected", Effect: TaintNoExecute}}},
			true, metav1.ConditionFalse, "Disconnected", "tainted: b.liken.sh/disconnected"},
		{"problem without a taint", Device{Name: "a", Problem: "asleep"}, true, metav1.ConditionFalse, ReasonUnhealthy, "asleep"},
	} {
		status, reason, message := readiness(c.dev, c.published)
		if status != c.status || reason != c.reason || message != c.message {
			t.Errorf("%s: %s %q %q, want %s %q %q", c.name, status, reason, message, c.status, c.reason, c.message)
		}
	}
}

func TestTaintReason(t *testing.T) {
	for key, want := range map[string]string{
		"audio.liken.sh/no-monitor":              "NoMonitor",
		"bluetooth.liken.sh/no-input-node":       "NoInputNode",
		"disconnected":                           "Disconnected",
		"x.liken.sh/2nd-try":                     "NdTry",
		"x.liken.sh/usb3.link_down":              "Usb3LinkDown",
		"x.liken.sh/---":                         ReasonUnhealthy,
		"x.liken.sh/\u00e9t\u00e9-\u00e9t\u00e9": "TT",
	} {
		if got := taintReason(key); got != want {
			t.Errorf("taintReason(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestStatusDataRefused(t *testing.T) {
	d := Device{Name: "a", StatusData: map[string]any{"c": make(chan int)}}
	if err := d.validate(); err == nil || !strings.Contains(err.Error(), `device "a": status data`) {
		t.Errorf("unencodable status data: %v", err)
	}
	d.StatusData = map[string]any{"big": strings.Repeat("x", MaxStatusDataBytes)}
	if err := d.validate(); err == nil || !strings.Contains(err.Error(), "at most 10240 allowed") {
		t.Errorf("status data over the limit: %v", err)
	}
	d.StatusData = map[string]any{"nodeName": "alsa_output.x"}
	if err := d.validate(); err != nil {
		t.Errorf("small status data refused: %v", err)
	}
}
