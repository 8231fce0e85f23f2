// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"os"
	"path/filepath"
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
// reports why (log and the liken_dra_registered gauge) and asks again
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
		if status == nil {
			logger.Error(nil, "The kubelet has not acknowledged this plugin's registration; asking again", "waited", backoff, "socket", d.registrationSocket())
		} else {
			logger.Error(nil, "The kubelet refused this plugin's registration; asking again", "reason", status.Error, "waited", backoff, "socket", d.registrationSocket())
		}
		d.metrics.registrationRetries.Inc()
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
