// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"testing"

	"k8s.io/client-go/dynamic"

	"github.com/liken-sh/operators/test/e2e/harness"
)

// startAudioCluster starts a real API server (no scheduler, no
// controller-manager) with the audio CRDs applied, stopped when t ends,
// and returns it with a dynamic client that acts as its admin. A failure
// to start ends the test.
func startAudioCluster(ctx context.Context, t *testing.T) (*harness.Cluster, dynamic.Interface) {
	t.Helper()
	c, err := harness.Start(ctx, harness.Options{WithoutScheduler: true, WithoutControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	if err := c.ApplyCRDs(ctx, "deploy/audio/crds"); err != nil {
		t.Fatal(err)
	}
	admin, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c, admin
}
