// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// DefaultRegistrationTimeout is how long the driver waits for the kubelet
// to acknowledge its registration before it reports that and asks again.
// The kubelet's plugin watcher registers a new socket within a second or
// two; 30 s leaves room for a kubelet that is itself starting.
const DefaultRegistrationTimeout = 30 * time.Second

// maxRegistrationBackoff bounds the wait between two repeated requests.
const maxRegistrationBackoff = 5 * time.Minute

// registration follows the kubelet's answers to the plugin registration
// handshake (GetInfo, then NotifyRegistrationStatus), which pass through
// the driver's gRPC interceptor.
type registration struct {
	mu      sync.Mutex
	status  *registerapi.RegistrationStatus // the last one the kubelet sent; nil before any
	changed chan struct{}                   // closed and replaced on every status
	asked   bool                            // the kubelet called GetInfo since the socket was last created
	offered []string                        // the services the last GetInfo answer offered
}

func newRegistration() *registration {
	return &registration{changed: make(chan struct{})}
}

// observe records a status the kubelet sent.
func (r *registration) observe(s *registerapi.RegistrationStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = s
	close(r.changed)
	r.changed = make(chan struct{})
}

// info records a GetInfo call and the services its answer offered.
func (r *registration) info(offered []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked, r.offered = true, offered
}

// renewed forgets the GetInfo calls made before the socket was created
// anew, so a kubelet that no longer asks is told apart from one that does.
func (r *registration) renewed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = false
}

// handshake returns whether the kubelet called GetInfo since the socket
// was last created, and what the answer offered.
func (r *registration) handshake() (bool, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked, r.offered
}

// state returns the last status (nil before any) and a channel closed at
// the next one.
func (r *registration) state() (*registerapi.RegistrationStatus, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.changed
}

// watchRegistration keeps the driver registered with the kubelet. The
// kubelet plugin helper registers once, when its socket appears in the
// kubelet's plugins_registry directory: a kubelet that refused the
// registration (Registered false), or never acknowledged it (it was not
// running, or missed the socket's creation), would otherwise leave the
// driver unknown to the kubelet for good. While not registered, this
// reports why in one line naming the cause (diagnose: a kubelet without
// DRA, one speaking none of the offered API versions, one that never
// asked) with the liken_dra_registered and liken_dra_registration_problem
// gauges, and asks again
// after a backoff (timeout, doubling up to 5 min) by renaming the socket
// away under a hidden name and back: the kubelet's plugin watcher skips
// hidden files and registers a socket anew on its create event, and the
// listener keeps serving across the rename because it is bound to the
// inode, not the name. Once registered it waits, without waking, for the
// kubelet's next status.
func (d *Driver) watchRegistration(ctx context.Context) {
	logger := klog.FromContext(ctx)
	timeout := d.opts.RegistrationTimeout
	backoff := timeout
	for {
		status, changed := d.reg.state()
		if status != nil && status.PluginRegistered {
			d.metrics.registered.Set(1)
			d.metrics.setRegistrationProblem("")
			logger.Info("Registered with the kubelet")
			backoff = timeout
			select {
			case <-ctx.Done():
				return
			case <-changed:
				continue
			}
		}
		d.metrics.registered.Set(0)
		if status != nil {
			// A refusal is known now: the metric says so at once, the
			// log line when the plugin asks again.
			asked, offered := d.reg.handshake()
			d.metrics.setRegistrationProblem(diagnose(status, asked, offered, d.opts.RegistrarDir).reason)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
			continue
		case <-time.After(backoff):
		}
		if status, _ := d.reg.state(); status != nil && status.PluginRegistered {
			continue
		}
		asked, offered := d.reg.handshake()
		p := diagnose(status, asked, offered, d.opts.RegistrarDir)
		kubeletSaid := ""
		if status != nil {
			kubeletSaid = status.Error
		}
		d.metrics.setRegistrationProblem(p.reason)
		logger.Error(nil, p.message+"; asking again", "reason", p.reason, "kubeletSaid", kubeletSaid, "waited", backoff, "socket", d.registrationSocket())
		d.metrics.registrationRetries.Inc()
		d.reg.renewed()
		if err := d.renewRegistrationSocket(); err != nil {
			logger.Error(err, "Asking the kubelet to register this plugin again")
		}
		backoff = min(2*backoff, maxRegistrationBackoff)
	}
}

// registrationSocket is where the kubelet plugin helper serves the
// registration service (kubeletplugin's default name in RegistrarDir).
func (d *Driver) registrationSocket() string {
	return filepath.Join(d.opts.RegistrarDir, d.opts.DriverName+"-reg.sock")
}

// renewRegistrationSocket renames the socket away and back, so the
// kubelet's plugin watcher sees it created again.
func (d *Driver) renewRegistrationSocket() error {
	sock := d.registrationSocket()
	hidden := filepath.Join(filepath.Dir(sock), "."+filepath.Base(sock)+".renew")
	if err := os.Rename(sock, hidden); err != nil {
		return err
	}
	return os.Rename(hidden, sock)
}

// Why a registration is not in place, the reason label of
// liken_dra_registration_problem.
const (
	// regNoKubelet: nothing called GetInfo on the registration socket.
	regNoKubelet = "NoKubeletAsked"
	// regUnacknowledged: GetInfo was called, no status followed.
	regUnacknowledged = "Unacknowledged"
	// regKubeletWithoutDRA: the kubelet has no handler for DRA plugins.
	regKubeletWithoutDRA = "KubeletWithoutDRA"
	// regKubeletDRAVersion: the kubelet speaks none of the offered services.
	regKubeletDRAVersion = "KubeletDRAVersion"
	// regRefused: any other refusal.
	regRefused = "Refused"
)

// registrationReasons is every reason, for the metric's series.
var registrationReasons = []string{regNoKubelet, regUnacknowledged, regKubeletWithoutDRA, regKubeletDRAVersion, regRefused}

// registrationProblem is one diagnosis: a reason from the list above and
// a sentence for an operator.
type registrationProblem struct {
	reason  string
	message string
}

// diagnose turns what the kubelet did (the status it sent, nil for none;
// whether it called GetInfo; the services the answer offered) into a
// reason and a sentence saying what it means for this node. The kubelet's
// plugin manager (pkg/kubelet/pluginmanager, operation_generator.go)
// reports a plugin type it has no handler for as "no handler registered
// for plugin type": the DRA handler exists only while the
// DynamicResourceAllocation feature gate is on. Its DRA handler
// (pkg/kubelet/cm/dra/plugin, ValidatePlugin) reports a plugin offering no
// gRPC service it speaks as "none of services supported by the plugin".
func diagnose(status *registerapi.RegistrationStatus, asked bool, offered []string, registrarDir string) registrationProblem {
	var plugin []string // the DRAPlugin services, not the health ones
	for _, o := range offered {
		if strings.HasSuffix(o, ".DRAPlugin") {
			plugin = append(plugin, o)
		}
	}
	services := strings.Join(plugin, ", ")
	if services == "" {
		services = "none seen"
	}
	switch {
	case status == nil && !asked:
		return registrationProblem{regNoKubelet, fmt.Sprintf("No kubelet has asked for this plugin's registration: the kubelet is not running, or it watches another plugins_registry directory than %s", registrarDir)}
	case status == nil:
		return registrationProblem{regUnacknowledged, "The kubelet read this plugin's registration but never said whether it accepted it"}
	case strings.Contains(status.Error, "no handler registered for plugin type"):
		return registrationProblem{regKubeletWithoutDRA, "The kubelet on this node has Dynamic Resource Allocation turned off (its DynamicResourceAllocation feature gate, on by default since Kubernetes 1.34) or predates it, so no pod on this node can get a device of this driver until it is turned on"}
	case strings.Contains(status.Error, "none of services supported by the plugin"):
		return registrationProblem{regKubeletDRAVersion, fmt.Sprintf("The kubelet on this node speaks none of the DRA API versions this plugin offers (%s; v1beta1 arrived in Kubernetes 1.32, v1 in 1.34), so no pod on this node can get a device of this driver until the kubelet is upgraded", services)}
	default:
		return registrationProblem{regRefused, "The kubelet refused this plugin's registration"}
	}
}
