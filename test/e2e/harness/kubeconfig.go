// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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

// UserKubeconfig writes <Dir>/<user with ':' as '-'>.kubeconfig for a client
// certificate of user in groups, signed by the cluster's CA, and returns its
// path. A kubelet joins with user "system:node:<name>" in "system:nodes",
// which the API server's Node authorizer recognises.
func (c *Cluster) UserKubeconfig(user string, groups ...string) (string, error) {
	cert, key, err := c.pki.clientCert(user, groups)
	if err != nil {
		return "", fmt.Errorf("harness: certificate for %s: %w", user, err)
	}
	b64 := base64.StdEncoding.EncodeToString
	data := fmt.Sprintf(kubeconfigTemplate, contextName, c.restConfig.Host, b64(c.pki.caCert), b64(cert), b64(key))
	path := filepath.Join(c.dir, strings.ReplaceAll(user, ":", "-")+".kubeconfig")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		return "", fmt.Errorf("harness: kubeconfig: %w", err)
	}
	return path, nil
}

// CAFile returns the path of the cluster CA's certificate (PEM), which
// signs every client certificate of the cluster.
func (c *Cluster) CAFile() string { return c.pki.caCertFile }

// APIServerPort returns the API server's port on 127.0.0.1.
func (c *Cluster) APIServerPort() int { return c.ports.apiserver }
