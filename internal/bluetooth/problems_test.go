// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
)

// Problems are logged at verbosity 0 (the pods of deploy/bluetooth/operator.yaml set no -v), and only
// when they change between passes.
func TestPassProblemsAreLoggedWhenTheyChange(t *testing.T) {
	var lines []string
	logger := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 0})
	p := newPassProblems()
	odd := errors.New("/org/bluez/hci0/dev_E4_17_D8_C5_67_6D: org.bluez.Device1.Class has D-Bus type \"s\", want \"u\"; read as absent")
	pipe := errors.New("hid: /sys/bus/hid/devices/0005:054C:0CE6.0001: uevent is a named pipe (FIFO), not a regular file")
	twice := errors.New("device /org/bluez/hci1/dev_E4_17_D8_C5_67_6D: E4:17:D8:C5:67:6D is also paired as /org/bluez/hci0/dev_E4_17_D8_C5_67_6D; publishing that one")

	take := func() []string { out := lines; lines = nil; return out }
	p.report(logger, []error{odd}, []error{pipe}, []error{twice})
	first := take()
	if len(first) != 3 {
		t.Fatalf("first pass logged %d lines, want one per problem:\n%s", len(first), strings.Join(first, "\n"))
	}
	for i, want := range []string{"BlueZ reported a property of the wrong type", "HID device or input node left out", "Device set built with a problem"} {
		if !strings.Contains(first[i], want) || !strings.Contains(first[i], `"problem"`) {
			t.Errorf("line %d %s does not say %q", i, first[i], want)
		}
	}

	// The same problems, pass after pass: nothing more.
	for range 3 {
		p.report(logger, []error{odd}, []error{pipe}, []error{twice})
	}
	if got := take(); len(got) != 0 {
		t.Errorf("unchanged problems logged again:\n%s", strings.Join(got, "\n"))
	}

	// The pipe is gone and the odd property is back to its type: each
	// is logged once as gone; the rest stays quiet.
	p.report(logger, nil, nil, []error{twice})
	gone := take()
	if len(gone) != 2 || !strings.Contains(gone[0], "Problem gone: BlueZ reported") || !strings.Contains(gone[1], "Problem gone: HID device") || !strings.Contains(gone[1], "named pipe") {
		t.Errorf("cleared problems logged as:\n%s", strings.Join(gone, "\n"))
	}
	p.report(logger, nil, nil, []error{twice})
	if got := take(); !reflect.DeepEqual(got, []string(nil)) {
		t.Errorf("quiet pass logged:\n%s", strings.Join(got, "\n"))
	}
}
