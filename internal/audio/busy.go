// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/backoff"
	"github.com/liken-sh/operators/internal/pipewire"
)

// ReasonDeviceBusy is the Ready reason of an endpoint whose PCM PipeWire
// could not open because something holds it (EBUSY).
const ReasonDeviceBusy = "DeviceBusy"

// Busy-retry backoff: the first retry BusyRetryFirst after the node was
// seen in error, each next one twice as late, at most BusyRetryMax apart.
const (
	BusyRetryFirst = time.Second
	BusyRetryMax   = 30 * time.Second
)

// busyState is one node's run of failed opens.
type busyState struct {
	id       uint32    // the node id the retries go to
	attempts int       // retries sent
	next     time.Time // when the next one is due
	message  string    // PipeWire's info.error
}

// deviceBusy reports whether PipeWire holds n in error because its ALSA
// device could not be opened: held by another program, or (HDA HDMI,
// sound/pci/hda/patch_hdmi.c hdmi_pcm_open) every converter of the card
// taken by the card's other PCMs. strerror(EBUSY) is "Device or resource
// busy", which PipeWire puts in info.error.
func deviceBusy(n *pipewire.Node) bool {
	return n != nil && n.State == pipewire.NodeStateError && strings.Contains(strings.ToLower(n.Error), "resource busy")
}

// busyBackoff is the wait after the attempts-th retry.
func busyBackoff(attempts int) time.Duration {
	return backoff.Doubling(BusyRetryFirst, BusyRetryMax, attempts)
}

// retryBusy retries the open of an endpoint's PCM that PipeWire left in
// error with EBUSY: PipeWire never tries again by itself, so the node is
// suspended (pipewire.Remote.SuspendNode), which clears its error, and
// the stream linked to it makes PipeWire open the device again. Retries
// back off (busyBackoff) while the node keeps coming back busy, and a
// pass is woken when the next one is due. It returns the node's state of
// retries, nil once the node is not busy.
func (o *operator) retryBusy(ctx context.Context, name string, n *pipewire.Node, now time.Time) *busyState {
	if !deviceBusy(n) {
		delete(o.busy, name)
		return nil
	}
	st := o.busy[name]
	if st == nil || st.id != n.ID {
		st = &busyState{id: n.ID, next: now.Add(BusyRetryFirst)}
		o.busy[name] = st
		klog.FromContext(ctx).Info("PipeWire could not open an output's device; retrying with backoff", "output", name, "node", n.ID, "error", n.Error)
	}
	st.message = n.Error
	if !now.Before(st.next) {
		suspend := o.suspendNode
		if suspend == nil {
			suspend = o.cfg.Remote.SuspendNode
		}
		if err := suspend(ctx, n.ID); err != nil {
			klog.FromContext(ctx).Info("Retrying a busy device failed", "output", name, "node", n.ID, "problem", err.Error())
		}
		st.attempts++
		st.next = now.Add(busyBackoff(st.attempts))
		if o.metrics != nil {
			o.metrics.busyRetries.WithLabelValues(name, retrySuspend).Inc()
		}
	}
	if o.wakeAfter != nil {
		o.wakeAfter(st.next.Sub(now))
	} else {
		time.AfterFunc(st.next.Sub(now), o.poke)
	}
	return st
}

// busyReady is the Ready condition of an endpoint whose device is busy.
// It changes with each retry, not with each pass.
func busyReady(st *busyState) metav1.Condition {
	return metav1.Condition{Type: audiov1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonDeviceBusy,
		Message: clipMessage(fmt.Sprintf("PipeWire cannot open this output's device (%s): another program holds it, or another HDMI/DP output of the card holds the converter it needs; retried %d times, the next retry %s after the last",
			st.message, st.attempts, busyBackoff(st.attempts)))}
}
