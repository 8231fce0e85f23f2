// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/liken-sh/operators/internal/atomicfile"
	"github.com/liken-sh/operators/internal/bdaddr"
)

// ClaimedFile is the file, in the root of BlueZ's storage tree, where
// bondfetch records the address of the adapter the pod claimed, for the
// operator container beside it: the operator holds no claim of its own
// (deploy/bluetooth/operator.yaml names the claim on bondfetch and
// bluetoothd), so it cannot resolve the adapter as bondfetch does, and
// the tree is the volume the two share. bluetoothd reads only
// <root>/<ADAPTER>/ directories (BlueZ src/adapter.c load_devices), so a
// dot file beside them is never taken for an adapter.
const ClaimedFile = ".liken-claimed-adapter"

// WriteClaimed records adapter in root/ClaimedFile (mode 0644, replaced
// atomically). Errors name the file.
func WriteClaimed(root string, adapter bdaddr.Address) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("recording the claimed adapter: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(root, ClaimedFile), []byte(adapter.String()+"\n"), 0o644); err != nil {
		return fmt.Errorf("recording the claimed adapter: %w", err)
	}
	return nil
}

// ReadClaimed returns the adapter WriteClaimed recorded under root; ok is
// false when nothing is recorded. Errors: the file is unreadable or does
// not hold one address.
func ReadClaimed(root string) (adapter bdaddr.Address, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(root, ClaimedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return bdaddr.Address{}, false, nil
	}
	if err != nil {
		return bdaddr.Address{}, false, err
	}
	if len(data) > 64 {
		return bdaddr.Address{}, false, fmt.Errorf("%s holds %d bytes, not one address", ClaimedFile, len(data))
	}
	a, err := bdaddr.Parse(strings.TrimSpace(string(data)))
	if err != nil || a.IsZero() {
		return bdaddr.Address{}, false, fmt.Errorf("%s: %q is not an adapter address", ClaimedFile, strings.TrimSpace(string(data)))
	}
	return a, true, nil
}
