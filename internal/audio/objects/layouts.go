// SPDX-License-Identifier: Apache-2.0

package objects

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
)

// ReadLayouts reads spec.layout of each named Sink, one GET each bounded
// by timeout, for the declare container before PipeWire starts. A Sink
// that does not exist yet, or has no layout, is left out of the map. The
// first other failure (no answer in time, no access, an object no single
// field of which is to blame for not decoding) ends the reads with an error naming the Sink, and the
// caller falls back to the hardware's layouts for all: one slow API
// server then costs one timeout, not one per Sink.
func ReadLayouts(ctx context.Context, client dynamic.Interface, names []string, timeout time.Duration) (map[string][]string, error) {
	out := map[string][]string{}
	sinks := client.Resource(audiov1.SinksResource)
	for _, name := range names {
		one, cancel := context.WithTimeout(ctx, timeout)
		u, err := sinks.Get(one, name, metav1.GetOptions{})
		cancel()
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("Sink %s: %w", name, err)
		}
		var sink audiov1.Sink
		// A Sink with fields the types cannot hold still gives its
		// layout, unless the layout is one of them.
		if err := decode(SinkKind, u, &sink); err != nil && !errors.As(err, new(*DecodeError)) {
			return nil, err
		}
		if len(sink.Spec.Layout) > 0 {
			out[name] = Positions(sink.Spec.Layout)
		}
	}
	return out, nil
}

// Positions spells a layout as plain strings.
func Positions(layout []audiov1.ChannelPosition) []string {
	out := make([]string, len(layout))
	for i, p := range layout {
		out[i] = string(p)
	}
	return out
}
