// SPDX-License-Identifier: Apache-2.0

package bluetoothcli

import "github.com/liken-sh/operators/internal/safetext"

// quote shows a value the user gave, cut short when long (safetext.Quote).
func quote(s string) string { return safetext.Quote(s) }
