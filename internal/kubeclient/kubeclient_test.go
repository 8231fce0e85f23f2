// SPDX-License-Identifier: Apache-2.0

package kubeclient

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
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

// A $KUBECONFIG that names only files that do not exist is an error
// naming them; one that names a file that exists is not.
func TestCheckKubeconfigFiles(t *testing.T) {
	rules := func() clientcmd.ConfigAccess { return clientcmd.NewDefaultClientConfigLoadingRules() }
	t.Setenv(KubeconfigEnv, "/nonexistent")
	if err := CheckKubeconfigFiles(rules()); err == nil || !strings.Contains(err.Error(), "KUBECONFIG names /nonexistent, which does not exist") {
		t.Fatalf("a missing file: %v", err)
	}
	t.Setenv(KubeconfigEnv, "/nonexistent:/also-missing")
	if err := CheckKubeconfigFiles(rules()); err == nil || !strings.Contains(err.Error(), "none of them exists") {
		t.Fatalf("two missing files: %v", err)
	}
	here := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(here, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(KubeconfigEnv, "/nonexistent:"+here)
	if err := CheckKubeconfigFiles(rules()); err != nil {
		t.Fatalf("one file exists: %v", err)
	}
	t.Setenv(KubeconfigEnv, "")
	if err := CheckKubeconfigFiles(rules()); err != nil {
		t.Fatalf("no KUBECONFIG: %v", err)
	}
}
