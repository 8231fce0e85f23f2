// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"errors"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Default locations, as the kubelet and container runtimes expect them.
const (
	DefaultRegistrarDir = "/var/lib/kubelet/plugins_registry"
	DefaultPluginsDir   = "/var/lib/kubelet/plugins"
	DefaultCDIDir       = "/var/run/cdi"
	DefaultBootIDPath   = "/proc/sys/kernel/random/boot_id"
)

// Options configure a Driver. DriverName, NodeName, KubeClient and CDIClass
// are required; every directory has the kubelet's default and can be moved
// (a kubelet with another --root-dir, or a test).
type Options struct {
	// DriverName is the DRA driver name, e.g. "audio.liken.sh". It is also
	// the CDI vendor and the prefix of every CDI spec file this driver owns.
	DriverName string
	// NodeName names this node: the pool, the slice's node and its owner.
	NodeName string
	// KubeClient reads claims and writes ResourceSlices.
	KubeClient kubernetes.Interface
	// CDIClass is the CDI device class: device IDs are
	// <DriverName>/<CDIClass>=<claimUID>-<device>.
	CDIClass string

	// RegistrarDir holds the kubelet's plugin registration sockets.
	RegistrarDir string
	// PluginDir holds this driver's DRA socket and its checkpoint; default
	// /var/lib/kubelet/plugins/<DriverName>.
	PluginDir string
	// CDIDir is where container runtimes read CDI specs.
	CDIDir string
	// BootIDPath is read to notice a reboot since the checkpoint was written.
	BootIDPath string

	// PodUID, when set, gives the sockets per-pod names so that a
	// replacement pod can serve beside the old one during a rolling update.
	PodUID types.UID

	// SettleQuiet and SettleCap bound the slice-write settle window; zero
	// means DefaultSettleQuiet and DefaultSettleCap.
	SettleQuiet time.Duration
	SettleCap   time.Duration

	// RegistrationTimeout is how long to wait for the kubelet to
	// acknowledge the plugin's registration before reporting it and asking
	// again; zero means DefaultRegistrationTimeout.
	RegistrationTimeout time.Duration

	// Registerer receives the core's metrics; nil keeps them private.
	Registerer prometheus.Registerer

	// OnClaimsChanged, when set, is called after a claim was prepared or
	// unprepared, so an operator that reports who holds a device
	// (Driver.Holders) can look again. It is called with the driver's
	// state locked: it must return at once and must not call the Driver.
	OnClaimsChanged func()
}

func (o *Options) complete() error {
	switch {
	case o.DriverName == "":
		return errors.New("dra: DriverName is required")
	case o.NodeName == "":
		return errors.New("dra: NodeName is required")
	case o.KubeClient == nil:
		return errors.New("dra: KubeClient is required")
	case o.CDIClass == "":
		return errors.New("dra: CDIClass is required")
	}
	if o.RegistrarDir == "" {
		o.RegistrarDir = DefaultRegistrarDir
	}
	if o.PluginDir == "" {
		o.PluginDir = filepath.Join(DefaultPluginsDir, o.DriverName)
	}
	if o.CDIDir == "" {
		o.CDIDir = DefaultCDIDir
	}
	if o.BootIDPath == "" {
		o.BootIDPath = DefaultBootIDPath
	}
	if o.RegistrationTimeout <= 0 {
		o.RegistrationTimeout = DefaultRegistrationTimeout
	}
	return nil
}
