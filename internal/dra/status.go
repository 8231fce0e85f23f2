// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	resourceapply "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/liken-sh/operators/internal/backoff"
)

// ConditionReady is the condition every status.devices entry this core
// writes carries: True while the device is published and fit, False with
// a reason while it is not.
const ConditionReady = "Ready"

// The reasons of the Ready condition that do not come from a taint (a
// taint gives its key's name in CamelCase: ".../no-monitor" is NoMonitor).
const (
	// ReasonReady: the device is published with no Problem and no
	// taint that keeps claims off it.
	ReasonReady = "Ready"
	// ReasonGone: the node's pool no longer publishes the device.
	ReasonGone = "DeviceGone"
	// ReasonUnhealthy: the device has a Problem and no taint to name it.
	ReasonUnhealthy = "Unhealthy"
)

// Status write retries: the first after statusRetryFirst, doubling to
// statusRetryMax, for as long as a write fails (the API server is away,
// or the claim's status cannot be written yet).
const (
	statusRetryFirst = time.Second
	statusRetryMax   = time.Minute
)

// statusClaim is what the status writer needs of one prepared claim.
type statusClaim struct {
	namespace, name string
	devices         []preparedDevice
}

// transition is the Ready status a device of a claim last had, and since
// when.
type transition struct {
	status metav1.ConditionStatus
	since  metav1.Time
}

// statusKey names one entry of a claim's status.devices.
type statusKey struct {
	claim  types.UID
	device string
	share  types.UID
}

// statusWriter keeps the status.devices entries of this driver's devices
// in every claim it prepared (KEP-4817): each entry names the device,
// carries the operator's Device.StatusData and a Ready condition that
// follows the published device, and goes when the claim is unprepared.
//
// It writes with server-side apply on the status subresource under a
// field manager named for the driver, so each driver owns only its own
// entries and two drivers' devices in one claim never overwrite each
// other's. Writes happen in the background, never inside prepare or
// unprepare, so an API server that is away delays the status and never a
// pod; a failed write is retried with backoff. k8s.io/dynamic-resource-
// allocation offers no helper for this (its kubeletplugin leaves device
// status to the driver), so it is written here with client-go's apply
// configurations.
type statusWriter struct {
	driver  string
	client  kubernetes.Interface
	claims  func() (map[types.UID]statusClaim, error)
	metrics *metrics
	now     func() time.Time

	poked chan struct{}

	mu      sync.Mutex
	devices map[string]Device // as last published; nil until the first publish
	data    map[string][]byte // each device's status data as last seen, kept when it goes

	// Owned by run: what was last written to each claim, and when each
	// entry's Ready condition last changed.
	applied map[types.UID]appliedStatus
	since   map[statusKey]transition
}

// appliedStatus is what the writer last wrote to one claim.
type appliedStatus struct {
	namespace, name string
	entries         []resourceapi.AllocatedDeviceStatus
}

func newStatusWriter(driver string, client kubernetes.Interface, claims func() (map[types.UID]statusClaim, error), m *metrics) *statusWriter {
	return &statusWriter{
		driver: driver, client: client, claims: claims, metrics: m, now: time.Now,
		poked: make(chan struct{}, 1), data: map[string][]byte{},
		applied: map[types.UID]appliedStatus{}, since: map[statusKey]transition{},
	}
}

// poke asks for a sync soon; it never blocks.
func (s *statusWriter) poke() {
	select {
	case s.poked <- struct{}{}:
	default:
	}
}

// publish records the devices the slice holds now (the publisher's
// onWrite) and asks for a sync.
func (s *statusWriter) publish(devices []Device) {
	s.mu.Lock()
	s.devices = make(map[string]Device, len(devices))
	for _, d := range devices {
		s.devices[d.Name] = d
		// Validated by SetDevices, so the encoding cannot fail here.
		if raw, err := d.statusData(); err == nil && raw != nil {
			s.data[d.Name] = raw
		}
	}
	s.mu.Unlock()
	s.poke()
}

// run syncs at every poke until ctx ends, retrying a failed sync with
// backoff.
func (s *statusWriter) run(ctx context.Context) {
	var retry <-chan time.Time
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.poked:
		case <-retry:
		}
		if s.sync(ctx) {
			retry, failures = nil, 0
			continue
		}
		retry = time.After(backoff.Doubling(statusRetryFirst, statusRetryMax, failures))
		failures++
	}
}

// sync brings every prepared claim's entries to what the devices say now
// and removes the entries of claims no longer prepared. It reports
// whether every write succeeded. Before the first publish nothing is
// known about the devices, so nothing is written.
func (s *statusWriter) sync(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	claims, err := s.claims()
	if err != nil {
		logger.Error(err, "Reading the prepared claims for their device status")
		return false
	}
	s.mu.Lock()
	if s.devices == nil {
		s.mu.Unlock()
		return true
	}
	want := make(map[types.UID][]resourceapi.AllocatedDeviceStatus, len(claims))
	for uid, c := range claims {
		want[uid] = s.entries(uid, c.devices)
	}
	s.mu.Unlock()

	ok := true
	uids := make([]types.UID, 0, len(claims))
	for uid := range claims {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	for _, uid := range uids {
		c := claims[uid]
		if prev, had := s.applied[uid]; had && equality.Semantic.DeepEqual(prev.entries, want[uid]) {
			continue
		}
		err := s.apply(ctx, uid, c.namespace, c.name, want[uid])
		switch {
		case err != nil && !apierrors.IsNotFound(err):
			logger.Error(err, "Writing the claim's device status", "claim", klog.KRef(c.namespace, c.name), "uid", uid)
			ok = false
		default:
			// Written, or the claim is gone (its unprepare follows).
			s.applied[uid] = appliedStatus{namespace: c.namespace, name: c.name, entries: want[uid]}
			logger.V(3).Info("Wrote the claim's device status", "claim", klog.KRef(c.namespace, c.name), "uid", uid, "devices", len(want[uid]))
		}
	}
	for uid, prev := range s.applied {
		if _, prepared := claims[uid]; prepared {
			continue
		}
		err := s.apply(ctx, uid, prev.namespace, prev.name, nil)
		// A claim that is gone, or that was replaced by another of the
		// same name (whose UID differs, which the API server refuses as
		// a change of metadata.uid), holds no entry of this driver's.
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
			logger.Error(err, "Removing the unprepared claim's device status", "claim", klog.KRef(prev.namespace, prev.name), "uid", uid)
			ok = false
			continue
		}
		delete(s.applied, uid)
		for k := range s.since {
			if k.claim == uid {
				delete(s.since, k)
			}
		}
		logger.V(3).Info("Removed the unprepared claim's device status", "claim", klog.KRef(prev.namespace, prev.name), "uid", uid)
	}
	return ok
}

// entries are the status.devices entries of one claim's devices, sorted
// by device and share. The caller holds s.mu.
func (s *statusWriter) entries(uid types.UID, devices []preparedDevice) []resourceapi.AllocatedDeviceStatus {
	out := make([]resourceapi.AllocatedDeviceStatus, 0, len(devices))
	for _, p := range devices {
		dev, published := s.devices[p.Device]
		status, reason, message := readiness(dev, published)
		key := statusKey{claim: uid, device: p.Device}
		e := resourceapi.AllocatedDeviceStatus{Driver: s.driver, Pool: p.Pool, Device: p.Device}
		if p.ShareID != nil {
			key.share = *p.ShareID
			e.ShareID = ptr.To(string(*p.ShareID))
		}
		t, seen := s.since[key]
		if !seen || t.status != status {
			// The API keeps times to the second; so does the comparison
			// with what was written last.
			t = transition{status: status, since: metav1.NewTime(s.now().Truncate(time.Second))}
			s.since[key] = t
		}
		e.Conditions = []metav1.Condition{{Type: ConditionReady, Status: status, Reason: reason, Message: message, LastTransitionTime: t.since}}
		if raw := s.data[p.Device]; raw != nil {
			e.Data = &runtime.RawExtension{Raw: raw}
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b resourceapi.AllocatedDeviceStatus) int {
		if c := strings.Compare(a.Device, b.Device); c != 0 {
			return c
		}
		return strings.Compare(deref(a.ShareID), deref(b.ShareID))
	})
	return out
}

// readiness is a device's Ready condition: True while it is published
// with no Problem and no taint that keeps claims off it; otherwise False,
// with the first such taint's name in CamelCase as the reason (a taint
// key "audio.liken.sh/no-monitor" gives NoMonitor) and the Problem, or
// the taint keys, as the message, as the kubelet's health stream says it.
func readiness(d Device, published bool) (status metav1.ConditionStatus, reason, message string) {
	if !published {
		return metav1.ConditionFalse, ReasonGone, "the driver no longer publishes this device on the node"
	}
	h := deviceHealth("", d)
	if h.Message == "" {
		return metav1.ConditionTrue, ReasonReady, "published and fit"
	}
	reason = ReasonUnhealthy
	for _, t := range d.Taints {
		if t.Effect == TaintNoSchedule || t.Effect == TaintNoExecute {
			reason = taintReason(t.Key)
			break
		}
	}
	return metav1.ConditionFalse, reason, h.Message
}

// taintReason turns a taint key's name into a condition reason: the part
// after the domain, in CamelCase, without the characters a reason may not
// hold ("no-monitor" gives NoMonitor). A name that yields nothing gives
// ReasonUnhealthy.
func taintReason(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		key = key[i+1:]
	}
	var b strings.Builder
	upper := true
	for _, r := range key {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || (unicode.IsDigit(r) && b.Len() > 0)):
			if upper {
				r = unicode.ToUpper(r)
			}
			b.WriteRune(r)
			upper = false
		default:
			upper = true
		}
	}
	if b.Len() == 0 {
		return ReasonUnhealthy
	}
	return b.String()
}

// apply writes entries as this driver's part of the claim's
// status.devices; no entries removes every entry this driver wrote. The
// claim's UID travels with the write, so a claim replaced under the same
// name is refused rather than written.
func (s *statusWriter) apply(ctx context.Context, uid types.UID, namespace, name string, entries []resourceapi.AllocatedDeviceStatus) error {
	ac := resourceapply.ResourceClaim(name, namespace).WithUID(uid)
	if len(entries) > 0 {
		st := resourceapply.ResourceClaimStatus()
		for _, e := range entries {
			ae := resourceapply.AllocatedDeviceStatus().WithDriver(e.Driver).WithPool(e.Pool).WithDevice(e.Device)
			if e.ShareID != nil {
				ae.WithShareID(*e.ShareID)
			}
			for _, c := range e.Conditions {
				ae.WithConditions(metav1apply.Condition().WithType(c.Type).WithStatus(c.Status).
					WithReason(c.Reason).WithMessage(c.Message).WithLastTransitionTime(c.LastTransitionTime))
			}
			if e.Data != nil {
				ae.WithData(*e.Data)
			}
			st.WithDevices(ae)
		}
		ac.WithStatus(st)
	}
	_, err := s.client.ResourceV1().ResourceClaims(namespace).ApplyStatus(ctx, ac, metav1.ApplyOptions{FieldManager: s.driver, Force: true})
	s.metrics.statusWrites.WithLabelValues(result(err)).Inc()
	if err != nil {
		return fmt.Errorf("claim %s/%s: %w", namespace, name, err)
	}
	return nil
}

// statusClaims is the status writer's view of the checkpoint: every claim
// whose prepare completed, read fresh under the state lock so that a
// claim another process (a rolling update's) unprepared is not written
// again.
func (d *Driver) statusClaims() (map[types.UID]statusClaim, error) {
	unlock, err := d.lockState()
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := make(map[types.UID]statusClaim, len(d.cp.body.Claims))
	for uid, rec := range d.cp.body.Claims {
		if rec.Phase == phaseCompleted {
			out[uid] = statusClaim{namespace: rec.Namespace, name: rec.Name, devices: slices.Clone(rec.Devices)}
		}
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
