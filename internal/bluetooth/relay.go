// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bonds"
	"github.com/liken-sh/operators/internal/hid"
	"github.com/liken-sh/operators/internal/relayd"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// DefaultRelaySocket is where the input-relay sidecar serves
// (deploy/bluetooth/operator.yaml's relay volume).
const DefaultRelaySocket = "/var/run/bluetooth.liken.sh/relay/relay.sock"

// InputRelay is the Relay of the pod's input-relay sidecar
// (cmd/bluetooth-input-relay), reached over its unix socket: each claim
// on a controller gets virtual input devices of its own that live as long
// as the claim, whatever the controller and this operator do meanwhile.
type InputRelay struct {
	client  *relayd.Client
	devRoot string
}

// NewInputRelay returns the relay serving on socket; devRoot is the /dev
// root the operator names nodes below (hid.DefaultDevRoot).
func NewInputRelay(socket, devRoot string) *InputRelay {
	return &InputRelay{client: relayd.NewClient(socket), devRoot: devRoot}
}

// Nodes implements Relay: it asks the relay for the claim's devices on
// the controller at address, making them if the claim has none yet. The
// relay refuses a controller it has never seen connected (it cannot know
// what devices it has); the error says so and the kubelet retries
// prepare, so a claim made while the pad sleeps waits for the pad's
// first connection.
func (r *InputRelay) Nodes(ctx context.Context, claim types.UID, address bdaddr.Address) ([]hid.Node, error) {
	st, err := r.client.Attach(ctx, string(claim), address.String())
	if err != nil {
		return nil, err
	}
	nodes := make([]hid.Node, 0, len(st.Nodes))
	for _, n := range st.Nodes {
		nodes = append(nodes, hid.Node{Path: filepath.Join(r.devRoot, "input", n.Name), Major: n.Major, Minor: n.Minor})
	}
	return nodes, nil
}

// Keep lets the relay's claims that claims (the DRA driver's prepared and
// preparing claims) no longer holds go, and returns a description of the
// nodes of those it keeps, which changes when the relay made them again
// (after its own restart) so the caller knows to rewrite the claims'
// specs. The relay's list is read before claims is asked for, so a claim
// prepared meanwhile is never let go.
func (r *InputRelay) Keep(ctx context.Context, claims func() map[types.UID]bool) (string, error) {
	st, err := r.client.Status(ctx)
	if err != nil {
		return "", err
	}
	held := claims()
	var b strings.Builder
	b.WriteString("relay:")
	var errs []error
	for _, uid := range slices.Sorted(maps.Keys(st)) {
		if !held[types.UID(uid)] {
			if err := r.client.Release(ctx, uid); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		fmt.Fprintf(&b, " %s=", uid)
		for _, n := range st[uid].Nodes {
			fmt.Fprintf(&b, "%d:%d,", n.Major, n.Minor)
		}
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("letting the input relay's unprepared claims go: %v", errs)
	}
	return b.String(), nil
}

// keepRelayClaims lets the input relay's claims that the driver no longer
// holds go (InputRelay.Keep) and describes the nodes of the rest; "" with
// no input relay. A relay that cannot be reached is logged and described
// as such, so the pass after it comes back rewrites the specs.
func (o *operator) keepRelayClaims(ctx context.Context) string {
	r, ok := o.cfg.Relay.(*InputRelay)
	if !ok || r == nil {
		return ""
	}
	key, err := r.Keep(ctx, func() map[types.UID]bool {
		held := map[types.UID]bool{}
		for uid := range o.driver.Claims() {
			held[uid] = true
		}
		return held
	})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Reading the input relay's claims")
		return " relay: unreachable"
	}
	return " " + key
}

// relayInputs returns the input relay's snapshots, each encoded as a
// bond's Input, by controller address; nil with no input relay or when
// it does not answer.
func (o *operator) relayInputs(ctx context.Context) map[bdaddr.Address][]byte {
	r, ok := o.cfg.Relay.(*InputRelay)
	if !ok || r == nil {
		return nil
	}
	snaps, err := r.client.Snapshots(ctx)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Reading the input relay's controllers")
		return nil
	}
	out := map[bdaddr.Address][]byte{}
	for address, list := range snaps {
		addr, err := bdaddr.Parse(address)
		if err != nil || len(list) == 0 {
			continue
		}
		if data, err := json.Marshal(list); err == nil && len(data) <= bonds.MaxInputSize {
			out[addr] = data
		}
	}
	return out
}

// seedRelay gives the input relay what the bond Secrets of adapter keep
// about their controllers (Bond.Input), once per adapter for this
// process, so that in a new pod a claim on a controller that sleeps still
// gets its devices. A controller the relay refuses is logged and the
// rest are given theirs; the adapter is tried again at the next
// write-back (the relay keeps a snapshot it already has).
func (o *operator) seedRelay(ctx context.Context, adapter bdaddr.Address) {
	r, ok := o.cfg.Relay.(*InputRelay)
	if !ok || r == nil || o.seeded[adapter] {
		return
	}
	logger := klog.FromContext(ctx)
	fetched, err := bonds.Fetch(ctx, o.cfg.KubeClient.CoreV1().Secrets(o.cfg.Namespace), o.cfg.Namespace, adapter)
	if err != nil {
		logger.Error(err, "Reading the bonds' input capabilities for the input relay", "adapter", adapter)
		return
	}
	complete := true
	for _, b := range fetched.Bonds {
		caps, err := bonds.ParseInput(b.Input)
		if err != nil || len(caps) == 0 {
			continue // DecodeSecret already refused what does not parse
		}
		// One controller the relay refuses does not keep the others
		// from theirs; the adapter is seeded again next time.
		if err := r.client.Seed(ctx, b.Device.String(), caps); err != nil {
			logger.Error(err, "Giving the input relay a controller's capabilities", "controller", b.Device)
			complete = false
		}
	}
	o.seeded[adapter] = complete
}

// relayablePeers returns the controllers the input relay knows, and false
// with no input relay or when it does not answer (the last answer then
// stands).
func (o *operator) relayablePeers(ctx context.Context) ([]bdaddr.Address, bool) {
	r, ok := o.cfg.Relay.(*InputRelay)
	if !ok || r == nil {
		return nil, false
	}
	snaps, err := r.client.Snapshots(ctx)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("The input relay does not answer; its controllers are as it last said", "err", err)
		return nil, false
	}
	var out []bdaddr.Address
	for address, list := range snaps {
		if addr, err := bdaddr.Parse(address); err == nil && len(list) > 0 {
			out = append(out, addr)
		}
	}
	return out, true
}
