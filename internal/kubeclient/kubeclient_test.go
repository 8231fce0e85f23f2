// SPDX-License-Identifier: Apache-2.0

package kubeclient

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigSources(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	kc := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Config(path, "liken-test")
	if err != nil || cfg.Host != "https://127.0.0.1:6443" || cfg.UserAgent != "liken-test" {
		t.Fatalf("from a file: %+v, %v", cfg, err)
	}
	t.Setenv(KubeconfigEnv, path)
	if cfg, err = Config("", "x"); err != nil || cfg.BearerToken != "t" {
		t.Fatalf("from $KUBECONFIG: %v", err)
	}
	t.Setenv(KubeconfigEnv, "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := Config("", "x"); err == nil || !strings.Contains(err.Error(), "in-cluster") {
		t.Fatalf("outside a cluster: %v", err)
	}
	if _, err := Config(filepath.Join(dir, "missing"), "x"); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("a missing file: %v", err)
	}
}
