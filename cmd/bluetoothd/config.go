// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/liken-sh/operators/internal/atomicfile"
)

// configMode is the mode of main.conf and input.conf: bluetoothd reads them
// as root, and they hold no secret.
const configMode = 0o644

// mainConf is BlueZ's main.conf: AutoEnable powers every adapter as it
// appears (src/main.conf, [Policy]), and nothing else is set, so privacy
// stays off and the adapter keeps its public identity.
const mainConf = `# Written by the bluetoothd image's entrypoint at every start.
[Policy]
AutoEnable=true
`

// inputConfFormat is BlueZ's input.conf (profiles/input/input.conf).
// ClassicBondedOnly=true refuses HID connections from devices that are not
// bonded (CVE-2023-45866).
const inputConfFormat = `# Written by the bluetoothd image's entrypoint at every start, from
# BLUETOOTH_CLASSIC_BONDED_ONLY.
[General]
ClassicBondedOnly=%t
`

// parseClassicBondedOnly reads BLUETOOTH_CLASSIC_BONDED_ONLY: empty means
// true, and only the exact strings "true" and "false" are accepted. glib's
// key-file reader takes an unknown boolean as false, so passing on any other
// spelling ("yes", "1", "True") would silently reopen CVE-2023-45866.
func parseClassicBondedOnly(v string) (bool, error) {
	switch v {
	case "", "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%s=%q: want exactly \"true\" or \"false\" (unset means true)", EnvClassicBondedOnly, v)
}

// writeConfig writes main.conf and input.conf into dir, creating dir (0755)
// if needed. Each file is written to a temporary name and renamed, so
// bluetoothd never reads half a file.
func writeConfig(dir string, classicBondedOnly bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "main.conf"), []byte(mainConf), configMode); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "input.conf"), fmt.Appendf(nil, inputConfFormat, classicBondedOnly), configMode)
}
