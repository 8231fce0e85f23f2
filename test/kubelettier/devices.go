// SPDX-License-Identifier: Apache-2.0

package kubelettier

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// FreeNumber returns the first n from first to last for which the path
// fmt.Sprintf(format, n) does not exist, so that a stand-in device node
// made there takes the place of no node the host has. It fails, naming
// format and the range, when every one exists, and on any error but
// "does not exist".
func FreeNumber(format string, first, last int) (int, error) {
	for n := first; n <= last; n++ {
		_, err := os.Lstat(fmt.Sprintf(format, n))
		if errors.Is(err, fs.ErrNotExist) {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("kubelettier: every path %s for %d..%d exists on this host; no free one for a stand-in node", format, first, last)
}
