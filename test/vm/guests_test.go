// SPDX-License-Identifier: Apache-2.0

package vm

import (
	"strings"
	"testing"
)

// TestPanickedBeforeInit tells an emulated boot that died before /init
// (repeated) from one whose tests ran (not repeated), on console text of
// the shape qemu's serial console holds.
func TestPanickedBeforeInit(t *testing.T) {
	early := `[    1.571075] traps: PANIC: double fault, error_code: 0x0
[    1.573256] Oops: double fault: 0000 [#1] PREEMPT SMP NOPTI
[    1.573256]  apparmor_init+0x3d/0x540
[    1.573256] Kernel panic - not syncing: Fatal exception in interrupt
`
	up := GuestUpLine + " 5.85 s\nvm-test: alsa starts at 5.87 s\n"
	late := up + "[   40.100000] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000100\n"
	good := up + "vm-test: alsa exited 0 at 7.21 s\n[  106.460488] reboot: Power down\n"
	for _, c := range []struct {
		name, console string
		want          bool
	}{
		{"panic before /init", early, true},
		{"panic after /init started", late, false},
		{"a good boot", good, false},
		{"no console at all", "", false},
	} {
		if got := PanickedBeforeInit([]byte(c.console)); got != c.want {
			t.Errorf("%s: PanickedBeforeInit = %v, want %v", c.name, got, c.want)
		}
	}
	if !strings.Contains(InitScript([]string{"alsa"}), `echo "`+GuestUpLine+` $(up) s"`) {
		t.Errorf("/init does not print GuestUpLine:\n%s", InitScript([]string{"alsa"}))
	}
}
