// SPDX-License-Identifier: Apache-2.0

package modes

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// The test binary doubles as the audio-operator binary: TestMain runs the
// mode named in roleEnv instead of the tests, in a process of its own, as
// a container's first process would.
const (
	roleEnv        = "MODES_TEST_ROLE"
	declarationEnv = "MODES_TEST_DECLARATION"
	backstopEnv    = "MODES_TEST_BACKSTOP"
	returnLimitEnv = "MODES_TEST_RETURN_LIMIT"
)

func TestMain(m *testing.M) {
	role := os.Getenv(roleEnv)
	if role == "" {
		os.Exit(m.Run())
	}
	env := ProcessEnv()
	env.Declaration = os.Getenv(declarationEnv)
	env.DeclarationBackstop = durationEnv(backstopEnv)
	env.PipeWireReturnLimit = durationEnv(returnLimitEnv)
	switch role {
	case "pipewire":
		os.Exit(PipeWire(context.Background(), nil, env))
	case "wireplumber":
		os.Exit(WirePlumber(context.Background(), []string{"--profile=main-embedded"}, env))
	}
	fmt.Fprintf(os.Stderr, "unknown role %q\n", role)
	os.Exit(100)
}

func durationEnv(key string) time.Duration {
	d, _ := time.ParseDuration(os.Getenv(key))
	return d
}

func TestByNameHoldsTheManifestsModes(t *testing.T) {
	// The names deploy/audio/operator.yaml's commands and probes run.
	for _, name := range []string{"pipewire", "wireplumber", "graph-answers", "endpoints-registered"} {
		if ByName[name] == nil {
			t.Errorf("mode %q missing", name)
		}
	}
	if len(ByName) != 4 {
		t.Errorf("%d modes, want 4", len(ByName))
	}
}
