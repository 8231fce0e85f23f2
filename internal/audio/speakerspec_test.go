// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/pipewire"
)

// A speaker's Sink says in SpecApplied which field of its spec does not
// apply, with the value, rather than skipping it in silence.
func TestSpeakerSpecApplied(t *testing.T) {
	e := SpeakerEndpoint{Device: &pipewire.Device{Codecs: []pipewire.Codec{{ID: 1, Name: "sbc"}, {ID: 5, Name: "aptx"}}}}
	vol := int32(40)
	for name, tc := range map[string]struct {
		spec   audiov1.SinkSpec
		ep     SpeakerEndpoint
		reason string
		parts  []string
	}{
		"all applies": {audiov1.SinkSpec{EndpointSpec: audiov1.EndpointSpec{Volume: &vol}, Codec: "aptx"}, e, audiov1.ReasonApplied, nil},
		"codec not offered": {audiov1.SinkSpec{Codec: "ldac"}, e, audiov1.ReasonUnsupportedCodec,
			[]string{`spec.codec "ldac"`, "(sbc, aptx)", "spec.volume and spec.mute still apply"}},
		"codec while the speaker is off": {audiov1.SinkSpec{Codec: "ldac"}, SpeakerEndpoint{}, audiov1.ReasonApplied, nil},
		"layout": {audiov1.SinkSpec{Layout: []audiov1.ChannelPosition{"FL", "FR", "FC"}}, e, audiov1.ReasonLayoutNotSupported,
			[]string{"spec.layout [FL FR FC] is ignored"}},
		"controls and codec": {audiov1.SinkSpec{Codec: "mp3", EndpointSpec: audiov1.EndpointSpec{Controls: map[string]intstr.IntOrString{
			"Master Playback Volume": intstr.FromInt32(10)}}}, e, audiov1.ReasonUnsupportedCodec,
			[]string{`spec.codec "mp3"`, "spec.controls (Master Playback Volume) is ignored"}},
	} {
		c := SpeakerSpecApplied(tc.spec, tc.ep)
		want := metav1.ConditionFalse
		if tc.reason == audiov1.ReasonApplied {
			want = metav1.ConditionTrue
		}
		if c.Type != audiov1.ConditionSpecApplied || c.Status != want || c.Reason != tc.reason {
			t.Errorf("%s: %+v; want %s %s", name, c, want, tc.reason)
		}
		for _, p := range tc.parts {
			if !strings.Contains(c.Message, p) {
				t.Errorf("%s: message %q lacks %q", name, c.Message, p)
			}
		}
	}
}
