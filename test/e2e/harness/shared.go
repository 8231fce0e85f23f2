// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Shared is one control plane for all the tests of a package, started on
// first use: a package's TestMain calls Stop after m.Run. Setup, when set,
// runs once on the fresh cluster (installing CRDs, say).
type Shared struct {
	Options Options
	Setup   func(ctx context.Context, c *Cluster) error

	once sync.Once
	c    *Cluster
	err  error
}

// Get returns the shared cluster, starting it (bounded by 5 minutes) on
// the first call; a failed start fails every test that asks.
func (s *Shared) Get(t testing.TB) *Cluster {
	t.Helper()
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		s.c, s.err = Start(ctx, s.Options)
		if s.err == nil && s.Setup != nil {
			s.err = s.Setup(ctx, s.c)
		}
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.c
}

// Stop stops the cluster if one was started.
func (s *Shared) Stop() {
	if s.c != nil {
		s.c.Stop()
	}
}

// Kubectl runs the control plane's own kubectl (see [Kubectl]) against c
// from the module root, so paths such as deploy/audio/crds resolve, and
// returns its combined output. The error quotes the arguments and output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	bin, err := Kubectl(ctx, nil)
	if err != nil {
		return "", err
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", c.Kubeconfig()}, args...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
