// SPDX-License-Identifier: Apache-2.0

package gate

import (
	"strings"
	"testing"
)

// A capture stream that asks for a sink's monitor is told apart from a
// playback stream and from a capture of a source, whatever the case of
// "true".
func TestCapturesSink(t *testing.T) {
	for _, c := range []struct {
		props map[string]string
		want  bool
	}{
		{map[string]string{"media.class": "Stream/Input/Audio", "stream.capture.sink": "true"}, true},
		{map[string]string{"media.class": "Stream/Input/Audio", "stream.capture.sink": "True"}, true},
		{map[string]string{"media.class": "Stream/Input/Audio"}, false},
		{map[string]string{"media.class": "Stream/Input/Audio", "stream.capture.sink": "false"}, false},
		{map[string]string{"media.class": "Stream/Output/Audio", "stream.capture.sink": "true"}, false},
	} {
		if got := capturesSink(c.props); got != c.want {
			t.Errorf("capturesSink(%v) = %v, want %v", c.props, got, c.want)
		}
	}
}

// A claim's streams fit up to its share, and the one past it is refused
// naming the share and how to ask for more.
func TestOverShare(t *testing.T) {
	for held := 0; held < 4; held++ {
		if why := overShare(held, 4); why != "" {
			t.Errorf("%d held of 4: refused: %s", held, why)
		}
	}
	why := overShare(4, 4)
	if !strings.HasPrefix(why, RefusedShare) || !strings.Contains(why, "4 at once") || !strings.Contains(why, `"streams"`) {
		t.Errorf("the fifth of 4: %q", why)
	}
}
