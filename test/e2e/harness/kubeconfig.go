package harness

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
)

// contextName names the cluster, user and context in the kubeconfig.
const contextName = "liken-e2e"

func (c *Cluster) newRESTConfig() *rest.Config {
	return &rest.Config{
		Host: fmt.Sprintf("https://127.0.0.1:%d", c.ports.apiserver),
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   c.pki.caCert,
			CertData: c.pki.adminCert,
			KeyData:  c.pki.adminKey,
		},
		// client-go's default of 5 QPS throttles tests that create many
		// objects; this API server has no other users.
		QPS:   100,
		Burst: 200,
	}
}

// kubeconfigTemplate is written by hand rather than through clientcmd,
// whose extra dependencies would have to be added to go.mod.
const kubeconfigTemplate = `apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: %[2]s
    certificate-authority-data: %[3]s
users:
- name: %[1]s
  user:
    client-certificate-data: %[4]s
    client-key-data: %[5]s
contexts:
- name: %[1]s
  context:
    cluster: %[1]s
    user: %[1]s
current-context: %[1]s
`

// writeKubeconfig writes dir/admin.kubeconfig with the credentials
// embedded, so the file works from any directory and when copied.
func (c *Cluster) writeKubeconfig() (string, error) {
	b64 := base64.StdEncoding.EncodeToString
	data := fmt.Sprintf(kubeconfigTemplate, contextName, c.restConfig.Host,
		b64(c.pki.caCert), b64(c.pki.adminCert), b64(c.pki.adminKey))
	path := filepath.Join(c.dir, "admin.kubeconfig")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		return "", fmt.Errorf("harness: kubeconfig: %w", err)
	}
	return path, nil
}
