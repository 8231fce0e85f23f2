// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/godbus/dbus/v5"

	btv1 "github.com/liken-sh/operators/api/bluetooth/v1alpha1"
	"github.com/liken-sh/operators/internal/bluez"
)

// answerWait bounds how long the agent waits for a person's answer in a
// request's spec: less than bluetoothd's own 60 s agent timeout
// (src/agent.c REQUEST_TIMEOUT), so that the refusal is ours and says
// why, rather than a bare timeout.
var answerWait = 50 * time.Second

// attempt is one Device1.Pair in flight for a request.
type attempt struct {
	key     string // the request, namespace/name
	device  dbus.ObjectPath
	address string
	spec    chan struct{} // poked when the request's spec changes

	// Guarded by Controller.mu.
	done    bool
	err     error
	prompt  *btv1.Passkey
	waiting string // a Paired condition reason while the agent waits for the spec
	refusal string // why the agent refused, for the Failed message
}

// passkeyRE is what spec.pin must look like to answer RequestPasskey.
var passkeyRE = regexp.MustCompile(`^[0-9]{1,6}$`)

// requestSpecChanged wakes an agent call waiting on the request's spec.
func (c *Controller) requestSpecChanged(key string) {
	c.mu.Lock()
	a := c.attempts[key]
	c.mu.Unlock()
	if a != nil {
		select {
		case a.spec <- struct{}{}:
		default:
		}
	}
}

// attemptFor returns the attempt pairing device, if one runs.
func (c *Controller) attemptFor(device dbus.ObjectPath) *attempt {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.attempts {
		if a.device == device && !a.done {
			return a
		}
	}
	return nil
}

// refuse records why the agent refused and returns bluez.ErrRejected.
func (c *Controller) refuse(a *attempt, format string, args ...any) error {
	c.mu.Lock()
	a.refusal = fmt.Sprintf(format, args...)
	a.waiting = ""
	c.mu.Unlock()
	c.poke()
	return bluez.ErrRejected
}

// await shows what the agent waits for (reason, prompt) in the request's
// status and calls answer with the request as stored until it returns
// ok, the spec changes to no avail for answerWait, or the request goes.
func (c *Controller) await(a *attempt, reason string, prompt *btv1.Passkey, answer func(r *btv1.PairingRequest) (ok bool)) error {
	c.mu.Lock()
	a.waiting, a.prompt = reason, prompt
	c.mu.Unlock()
	c.poke()
	deadline := time.NewTimer(answerWait)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		r, ok := c.store.getRequest(a.key)
		if !ok || r.DeletionTimestamp != nil {
			return c.refuse(a, "the request was deleted while the device waited for an answer")
		}
		if answer(r) {
			c.mu.Lock()
			a.waiting = ""
			c.mu.Unlock()
			c.poke()
			return nil
		}
		select {
		case <-a.spec:
		case <-tick.C:
		case <-deadline.C:
			return c.refuse(a, "no answer in the request's spec within %v (%s)", answerWait, reason)
		}
	}
}

// RequestPinCode answers a legacy device with spec.pin, waiting for it.
func (c *Controller) RequestPinCode(device dbus.ObjectPath) (string, error) {
	a := c.attemptFor(device)
	if a == nil {
		return "", bluez.ErrRejected
	}
	var pin string
	err := c.await(a, btv1.ReasonAwaitingPIN, nil, func(r *btv1.PairingRequest) bool {
		pin = r.Spec.PIN
		return pin != ""
	})
	return pin, err
}

// DisplayPinCode shows a PIN for the person to type on the device.
func (c *Controller) DisplayPinCode(device dbus.ObjectPath, pin string) error {
	a := c.attemptFor(device)
	if a == nil {
		return bluez.ErrRejected
	}
	c.mu.Lock()
	a.prompt = &btv1.Passkey{Device: a.address, Action: btv1.PasskeyType, Value: truncate(pin, 16)}
	a.waiting = btv1.ReasonAwaitingPasskey
	c.mu.Unlock()
	c.poke()
	return nil
}

// RequestPasskey answers a device that shows a passkey with spec.pin
// (1 to 6 digits), waiting for it.
func (c *Controller) RequestPasskey(device dbus.ObjectPath) (uint32, error) {
	a := c.attemptFor(device)
	if a == nil {
		return 0, bluez.ErrRejected
	}
	var value uint32
	err := c.await(a, btv1.ReasonAwaitingPIN, nil, func(r *btv1.PairingRequest) bool {
		if !passkeyRE.MatchString(r.Spec.PIN) {
			return false
		}
		n, _ := strconv.ParseUint(r.Spec.PIN, 10, 32)
		value = uint32(n)
		return true
	})
	return value, err
}

// DisplayPasskey shows the passkey a keyboard is to type.
func (c *Controller) DisplayPasskey(device dbus.ObjectPath, passkey uint32, entered uint16) {
	a := c.attemptFor(device)
	if a == nil {
		return
	}
	n := int32(entered)
	c.mu.Lock()
	a.prompt = &btv1.Passkey{Device: a.address, Action: btv1.PasskeyType, Value: fmt.Sprintf("%06d", passkey%1000000), Entered: &n}
	a.waiting = btv1.ReasonAwaitingPasskey
	c.mu.Unlock()
	c.poke()
}

// RequestConfirmation waits for spec.passkeyConfirmed. Only an answer
// written after the passkey was shown counts: a true set in advance
// would confirm a number nobody compared.
func (c *Controller) RequestConfirmation(device dbus.ObjectPath, passkey uint32) error {
	a := c.attemptFor(device)
	if a == nil {
		return bluez.ErrRejected
	}
	r, ok := c.store.getRequest(a.key)
	if !ok {
		return bluez.ErrRejected
	}
	shownAt := r.Generation
	var confirmed bool
	err := c.await(a, btv1.ReasonAwaitingConfirmation,
		&btv1.Passkey{Device: a.address, Action: btv1.PasskeyConfirm, Value: fmt.Sprintf("%06d", passkey%1000000)},
		func(r *btv1.PairingRequest) bool {
			if r.Generation == shownAt || r.Spec.PasskeyConfirmed == nil {
				return false
			}
			confirmed = *r.Spec.PasskeyConfirmed
			return true
		})
	if err != nil {
		return err
	}
	if !confirmed {
		return c.refuse(a, "spec.passkeyConfirmed is false: the passkey was refused")
	}
	return nil
}

// RequestAuthorization accepts Just Works for the device being paired.
func (c *Controller) RequestAuthorization(device dbus.ObjectPath) error {
	if c.attemptFor(device) == nil {
		return bluez.ErrRejected
	}
	return nil
}

// AuthorizeService accepts a service connection of the device being
// paired; a bonded, trusted device never asks.
func (c *Controller) AuthorizeService(device dbus.ObjectPath, _ string) error {
	if c.attemptFor(device) == nil {
		return bluez.ErrRejected
	}
	return nil
}

// Cancel clears the prompt: bluetoothd gave the request up.
func (c *Controller) Cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.attempts {
		if !a.done {
			a.prompt, a.waiting = nil, ""
		}
	}
}
