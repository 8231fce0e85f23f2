// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/audio/objects"
)

// placeBuses are the kernel buses (/sys/bus) a sound card's place can
// start with (see place): the device names an operator forms begin,
// after the node part, with one of them or with a hashed place.
var placeBuses = map[string]bool{
	"pci": true, "usb": true, "platform": true, "acpi": true, "hdaudio": true,
	"soundwire": true, "i2c": true, "spi": true, "pnp": true,
}

// hashedPlace is the form of a place deviceName hashed to fit 63
// characters.
var hashedPlace = regexp.MustCompile(`^h[0-9a-f]{12}$`)

// namedForNode says whether name has the form of a device name node's
// operator forms (see deviceName): node's DNS label (or, where that
// could not fit, its first label), a dash, and a place beginning with a
// kernel bus or a hashed place. The bus is what keeps node "kitchen"
// from taking "kitchen-den-pci-0000-00-1f-3-hdmi-0" of node
// "kitchen-den" for its own.
func namedForNode(node, name string) bool {
	long := dnsLabel(node)
	rest, ok := strings.CutPrefix(name, long+"-")
	if !ok {
		short := shortNode(node)
		if short == long {
			return false
		}
		// The first label names outputs only past 63 characters.
		if rest, ok = strings.CutPrefix(name, short+"-"); !ok || len(long)+1+len(rest) <= 63 {
			return false
		}
	}
	bus, _, ok := strings.Cut(rest, "-")
	return ok && (placeBuses[bus] || hashedPlace.MatchString(bus))
}

// markNotServed writes Connected and Ready False, reason NotServed, once
// on each Sink and Source a person created under a name of this node's
// form (namedForNode) that is not one of this pass's endpoints: no
// operator serves it, and without a status every reader would wonder.
// The objects come from the store's informer of unclaimed objects, so a
// pass at rest makes no request; once written, an object names this node
// and is left alone (markGone too leaves it).
func (o *operator) markNotServed(ctx context.Context, eps []Endpoint) {
	served := map[objects.Kind]map[string]bool{objects.SinkKind: {}, objects.SourceKind: {}}
	for _, e := range eps {
		if e.Capture() {
			served[objects.SourceKind][e.Name] = true
		} else {
			served[objects.SinkKind][e.Name] = true
		}
	}
	logger := klog.FromContext(ctx)
	for _, k := range []objects.Kind{objects.SinkKind, objects.SourceKind} {
		what := "output"
		if k == objects.SourceKind {
			what = "input"
		}
		for _, name := range o.store.Unclaimed(k) {
			if served[k][name] || !namedForNode(o.cfg.Node, name) {
				continue
			}
			msg := fmt.Sprintf("no audio operator serves this %s: its name is of node %s's form, and the operator on %s has no %s of that name "+
				"(it names each after the node, the card's bus and location and the PCM id; `kubectl liken audio list` lists them)",
				k.Name, o.cfg.Node, o.cfg.Node, what)
			done, err := o.store.MarkNotServed(ctx, k, name, msg)
			if err != nil {
				o.problem(logger, name, err)
				continue
			}
			if done {
				logger.Info("No endpoint of this node has the name of this hand-made object", "kind", k.Name, "name", name)
			}
		}
	}
}

// notServed says whether conds are those markNotServed wrote.
func notServed(conds []metav1.Condition) bool {
	c := meta.FindStatusCondition(conds, audiov1.ConditionConnected)
	return c != nil && c.Reason == audiov1.ReasonNotServed
}
