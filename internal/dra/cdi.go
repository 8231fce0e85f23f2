// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// ContainerEdits is what one prepared device gives a consumer's container:
// device nodes, mounts, environment and hooks, in the CDI specification's
// own type (tags.cncf.io/container-device-interface/specs-go).
type ContainerEdits = cdispec.ContainerEdits

// cdiWriter owns the CDI spec files of one driver in one directory. Every
// file it writes is named <driver>-<claimUID>.json, and it touches no other
// file: liken and the other operator write their own specs in the same
// directory under their own prefixes.
type cdiWriter struct {
	dir    string
	vendor string // the driver name
	class  string
	cache  *cdi.Cache
}

func newCDIWriter(dir, driver, class string) (*cdiWriter, error) {
	if err := parser.ValidateVendorName(driver); err != nil {
		return nil, fmt.Errorf("driver name %q as CDI vendor: %w", driver, err)
	}
	if err := parser.ValidateClassName(class); err != nil {
		return nil, fmt.Errorf("CDI class %q: %w", class, err)
	}
	// Auto-refresh off: the cache is used only to write and remove our own
	// files, never to read the directory (which may hold other drivers' specs
	// this process has no business parsing).
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	if err != nil {
		return nil, fmt.Errorf("CDI cache for %s: %w", dir, err)
	}
	return &cdiWriter{dir: dir, vendor: driver, class: class, cache: cache}, nil
}

// specName is the spec's file name. The extension is explicit because the
// library picks the encoding from it and defaults to YAML.
func (w *cdiWriter) specName(claimUID types.UID) string {
	return w.vendor + "-" + string(claimUID) + ".json"
}

func (w *cdiWriter) path(claimUID types.UID) string {
	return filepath.Join(w.dir, w.specName(claimUID))
}

// deviceName is the CDI device name of one allocated device of a claim. It
// carries the claim UID, because runtimes cache specs and a name must never
// be reused by a later claim, and the share ID when the device is shared, so
// that two shares of one device in one claim stay two CDI devices.
func deviceName(claimUID types.UID, device string, share *types.UID) string {
	name := string(claimUID) + "-" + device
	if share != nil {
		name += "-" + string(*share)
	}
	return name
}

// qualified is the CDI device ID a container runtime resolves.
func (w *cdiWriter) qualified(name string) string {
	return parser.QualifiedName(w.vendor, w.class, name)
}

// hasEdits reports whether a device gives a container anything. The CDI
// specification refuses a device whose edits are empty (the library's
// reader fails the whole spec: "invalid device, empty device edits"), so
// such a device is left out of the spec and the kubelet is handed no CDI
// ID for it: the claim is prepared, and the container gets nothing for
// that device, which is all it asked for. equality.Semantic treats nil and
// empty lists alike and covers every field the spec's type has, now and
// when the specification adds one.
func hasEdits(e ContainerEdits) bool {
	return !equality.Semantic.DeepEqual(e, ContainerEdits{})
}

// inSpec is the devices that a claim's spec holds: those with edits.
func inSpec(devices []preparedDevice) []preparedDevice {
	var out []preparedDevice
	for _, d := range devices {
		if hasEdits(d.Edits) {
			out = append(out, d)
		}
	}
	return out
}

// current reports whether the claim's spec is as it should be on disk:
// present when a device of it has edits, or not needed at all.
func (w *cdiWriter) current(claimUID types.UID, devices []preparedDevice) bool {
	return len(inSpec(devices)) == 0 || w.exists(claimUID)
}

// write validates and atomically replaces the claim's spec, which holds
// the devices that have edits (inSpec); a claim with none has no spec, and
// any spec it had is removed. It writes the
// file itself rather than through the library's Cache.WriteSpec, which
// renames its temporary file before anything is synced (a crash can leave
// an empty spec) and leaves the temporary file behind when a write fails
// (a full /var/run would fill with them): here the temporary file is
// written, synced and validated by the library's own reader (cdi.ReadSpec)
// under a hidden name of this driver's, then renamed, then the directory is
// synced; on any failure it is removed and the previous spec is untouched.
func (w *cdiWriter) write(claimUID types.UID, devices []preparedDevice) error {
	devices = inSpec(devices)
	if len(devices) == 0 {
		return w.remove(claimUID)
	}
	spec := &cdispec.Spec{Kind: w.vendor + "/" + w.class}
	for _, d := range devices {
		spec.Devices = append(spec.Devices, cdispec.Device{Name: d.CDIName, ContainerEdits: d.Edits})
	}
	version, err := cdi.MinimumRequiredVersion(spec)
	if err != nil {
		return fmt.Errorf("CDI spec for claim %s: %w", claimUID, err)
	}
	spec.Version = version
	data, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("CDI spec for claim %s: %w", claimUID, err)
	}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return fmt.Errorf("write CDI spec %s: %w", w.path(claimUID), err)
	}
	tmp, err := os.CreateTemp(w.dir, "."+w.specName(claimUID)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write CDI spec %s: %w", w.path(claimUID), err)
	}
	done := false
	defer func() {
		if !done {
			_ = os.Remove(tmp.Name())
		}
	}()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644) // CreateTemp makes 0600; runtimes read specs as any user
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write CDI spec %s: %w", w.path(claimUID), err)
	}
	if _, err := cdi.ReadSpec(tmp.Name(), 0); err != nil {
		return fmt.Errorf("CDI spec for claim %s is not valid: %w", claimUID, err)
	}
	if err := os.Rename(tmp.Name(), w.path(claimUID)); err != nil {
		return fmt.Errorf("write CDI spec %s: %w", w.path(claimUID), err)
	}
	done = true
	if err := syncPath(w.dir); err != nil {
		return fmt.Errorf("sync CDI directory %s: %w", w.dir, err)
	}
	return nil
}

// exists reports whether the claim's spec file is on disk.
func (w *cdiWriter) exists(claimUID types.UID) bool {
	_, err := os.Stat(w.path(claimUID))
	return err == nil
}

// remove deletes the claim's spec; a file that is already gone is success.
func (w *cdiWriter) remove(claimUID types.UID) error {
	if err := w.cache.RemoveSpec(w.specName(claimUID)); err != nil {
		return fmt.Errorf("remove CDI spec %s: %w", w.path(claimUID), err)
	}
	return nil
}

// claimUIDs lists the claim UIDs of every spec file this driver owns in
// the directory. A missing directory holds none.
func (w *cdiWriter) claimUIDs() ([]types.UID, error) {
	entries, err := os.ReadDir(w.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []types.UID
	prefix := w.vendor + "-"
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, ".json") {
			continue
		}
		uid := types.UID(strings.TrimSuffix(strings.TrimPrefix(name, prefix), ".json"))
		if validUID(uid) == nil {
			out = append(out, uid)
		}
	}
	return out, nil
}

// syncPath fsyncs a file or directory.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
