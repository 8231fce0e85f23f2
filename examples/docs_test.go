// SPDX-License-Identifier: Apache-2.0

package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/test/e2e/harness"
)

// claimSnippets returns the YAML blocks of a doc page that are a
// ResourceClaim's spec or a part of one (a request's "exactly:", its
// "selectors:"), each made a whole ResourceClaim named docs-<n>.
func claimSnippets(t *testing.T, page string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)\n( *)```yaml\n(.*?)\n *```").FindAllStringSubmatch(string(data), -1)
	indent := func(s string, n int) string {
		pad := strings.Repeat(" ", n)
		return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
	}
	out := map[string]string{}
	for i, b := range blocks {
		var lines []string
		for _, l := range strings.Split(b[2], "\n") {
			lines = append(lines, strings.TrimPrefix(l, b[1]))
		}
		body := strings.Join(lines, "\n")
		name := fmt.Sprintf("docs-%d", i)
		head := "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: " + name + "\n  namespace: default\n"
		switch {
		case strings.HasPrefix(body, "spec:\n  devices:"):
			out[name] = head + body
		case strings.HasPrefix(body, "exactly:"):
			out[name] = head + "spec:\n  devices:\n    requests:\n      - name: pad\n" + indent(body, 8)
		case strings.HasPrefix(body, "selectors:"):
			out[name] = head + "spec:\n  devices:\n    requests:\n      - name: pad\n        exactly:\n          deviceClassName: bluetooth-input\n" + indent(body, 10)
		}
	}
	return out
}

// TestDocsClaimsApply applies every claim, and part of a claim, that
// docs/gamepad.md shows (mode: direct, a pad held alone with all its
// consumers, a selector), and docs/speaker.md (a whole output, a claim's
// role and volume), with a server-side dry run against the bases, and
// checks that what the page asks for survives validation: the API server
// drops a field it does not serve (a feature that is off) without an
// error, so the answer is read back.
func TestDocsClaimsApply(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	snippets := claimSnippets(t, "../docs/gamepad.md")
	if len(snippets) < 3 {
		t.Fatalf("docs/gamepad.md has %d claim snippets, want the selector, consumers and mode: direct ones", len(snippets))
	}
	for name, doc := range claimSnippets(t, "../docs/speaker.md") {
		snippets["speaker-"+name] = strings.ReplaceAll(doc, "name: "+name+"\n", "name: speaker-"+name+"\n")
	}
	c, err := harness.Start(ctx, harness.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if _, err := c.WaitForServiceAccount(ctx, "default", "default"); err != nil {
		t.Fatal(err)
	}
	for _, base := range []string{"deploy/bluetooth", "deploy/audio"} {
		if out, err := c.Kubectl(ctx, "apply", "--server-side", "-k", base); err != nil {
			t.Fatalf("%s: %v\n%s", base, err, out)
		}
	}
	dir := t.TempDir()
	var sawConsumers, sawDirect, sawRole bool
	for name, doc := range snippets {
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := c.Kubectl(ctx, "create", "--dry-run=server", "-o", "json", "-f", path)
		if err != nil {
			t.Errorf("%s:\n%s\n%v\n%s", name, doc, err, out)
			continue
		}
		var claim struct {
			Spec struct {
				Devices struct {
					Requests []struct {
						Exactly struct {
							Capacity struct {
								Requests map[string]string `json:"requests"`
							} `json:"capacity"`
						} `json:"exactly"`
					} `json:"requests"`
					Config []struct {
						Opaque struct {
							Driver     string          `json:"driver"`
							Parameters json.RawMessage `json:"parameters"`
						} `json:"opaque"`
					} `json:"config"`
				} `json:"devices"`
			} `json:"spec"`
		}
		if err := json.Unmarshal([]byte(out), &claim); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		if strings.Contains(doc, "consumers:") {
			sawConsumers = true
			if got := claim.Spec.Devices.Requests[0].Exactly.Capacity.Requests["consumers"]; got != "4" {
				t.Errorf("%s: the API server kept capacity.requests.consumers %q, want \"4\":\n%s", name, got, out)
			}
		}
		if strings.Contains(doc, "role: announcement") {
			sawRole = true
			cfg := claim.Spec.Devices.Config
			var params map[string]any
			if len(cfg) == 1 {
				json.Unmarshal(cfg[0].Opaque.Parameters, &params) //nolint:errcheck // checked by the comparison
			}
			if len(cfg) != 1 || cfg[0].Opaque.Driver != "audio.liken.sh" || params["role"] != "announcement" || params["volume"] != float64(100) {
				t.Errorf("%s: config %s, want audio.liken.sh's role and volume", name, out)
			}
		}
		if strings.Contains(doc, "mode: direct") {
			sawDirect = true
			cfg := claim.Spec.Devices.Config
			var params map[string]any
			if len(cfg) == 1 {
				json.Unmarshal(cfg[0].Opaque.Parameters, &params) //nolint:errcheck // checked by the comparison
			}
			if len(cfg) != 1 || cfg[0].Opaque.Driver != "bluetooth.liken.sh" || len(params) != 1 || params["mode"] != "direct" {
				t.Errorf("%s: config %s, want bluetooth.liken.sh's {\"mode\": \"direct\"}", name, out)
			}
		}
	}
	if !sawConsumers || !sawDirect || !sawRole {
		t.Errorf("applied the consumers snippet: %v, the mode: direct one: %v, docs/speaker.md's role one: %v", sawConsumers, sawDirect, sawRole)
	}
}
