// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"strings"
	"testing"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bluez"
)

// The name kept in a Peripheral's or PairingRequest's status, and named
// in Events, holds no control or format character and fits
// MaxNameBytes, whatever the device calls itself.
func TestHostileNameIsCleanInStatus(t *testing.T) {
	d := bluez.Device{Name: "\x1b[31mspeaker\x1b[0m\a\r\nINFO fake log line\u202e\u2066" + strings.Repeat("\u00e9", 200)}
	got := truncate(d.DisplayName(), btv1.MaxNameBytes)
	if strings.ContainsAny(got, "\x1b\a\r\n\u202e\u2066") || len(got) > btv1.MaxNameBytes || !strings.HasPrefix(got, "[31mspeaker[0m INFO fake log line") {
		t.Errorf("status name %q", got)
	}
}
