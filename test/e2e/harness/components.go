// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The command lines below follow the recipe measured in
// shared/design/infra.md. DRA is on by default in 1.37, so no feature gates
// or runtime-config are needed.

func (c *Cluster) etcdArgs() []string {
	client := fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdClient)
	peer := fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdPeer)
	return []string{
		"--name=e2e",
		"--data-dir=" + filepath.Join(c.dir, "etcd"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=e2e=" + peer,
		// Throwaway data: fsync only costs time.
		"--unsafe-no-fsync",
		"--quota-backend-bytes=1073741824",
		"--log-level=warn",
	}
}

func (c *Cluster) apiserverArgs() []string {
	// With no kubelet and no node-lifecycle controller, nothing would ever
	// lift the not-ready taint TaintNodesByCondition puts on new Nodes.
	disabled := []string{"TaintNodesByCondition"}
	if c.opts.WithoutControllerManager {
		// Nothing creates the "default" ServiceAccount without the KCM.
		disabled = append(disabled, "ServiceAccount")
	}
	var audit []string
	if c.opts.AuditLog {
		audit = []string{"--audit-policy-file=" + filepath.Join(c.dir, "audit-policy.yaml"), "--audit-log-path=" + c.AuditLogPath()}
	}
	audit = append(audit, c.featureGates()...)
	return append(audit,
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", c.ports.etcdClient),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// A loopback advertise address is refused by the default
		// endpoint reconciler; there is no in-cluster client anyway.
		"--endpoint-reconciler-type=none",
		fmt.Sprintf("--secure-port=%d", c.ports.apiserver),
		"--cert-dir="+filepath.Join(c.dir, "kube-apiserver"),
		"--tls-cert-file="+c.pki.servingCertFile,
		"--tls-private-key-file="+c.pki.servingKeyFile,
		"--client-ca-file="+c.pki.caCertFile,
		"--service-account-key-file="+c.pki.saPubFile,
		"--service-account-signing-key-file="+c.pki.saKeyFile,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.0.0.0/24",
		// Node authorizes a kubelet (system:node:<name>) for its own
		// node's objects, RBAC everyone else.
		"--authorization-mode=Node,RBAC",
		// For logs, exec and port-forward through a real kubelet: the
		// admin certificate is its client identity, and the kubelet is
		// reached by its hostname first (a test kubelet names itself
		// localhost, which resolves to the loopback).
		"--kubelet-client-certificate="+filepath.Join(c.pki.dir, "admin.crt"),
		"--kubelet-client-key="+filepath.Join(c.pki.dir, "admin.key"),
		"--kubelet-preferred-address-types=Hostname,InternalIP",
		"--allow-privileged=true",
		"--disable-admission-plugins="+strings.Join(disabled, ","),
	)
}

// auditPolicy records every request once, when its response is complete,
// with its metadata and no bodies (audit.k8s.io/v1 Policy).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  - level: Metadata
`

// AuditLogPath is where the API server writes its audit log when
// Options.AuditLog is set: one audit.k8s.io/v1 Event per line.
func (c *Cluster) AuditLogPath() string { return filepath.Join(c.dir, "audit.log") }

// writeAuditPolicy writes the policy Options.AuditLog names.
func (c *Cluster) writeAuditPolicy() error {
	return os.WriteFile(filepath.Join(c.dir, "audit-policy.yaml"), []byte(auditPolicy), 0o644)
}

// commonArgs are the flags the scheduler and controller manager share:
// the admin kubeconfig for everything, and loopback serving without
// leader election (there is one replica of each).
func (c *Cluster) commonArgs(port int) []string {
	return append(c.featureGates(),
		"--kubeconfig="+c.kubeconfig,
		"--authentication-kubeconfig="+c.kubeconfig,
		"--authorization-kubeconfig="+c.kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
	)
}

// featureGates is the --feature-gates flag Options.FeatureGates asks for.
func (c *Cluster) featureGates() []string {
	if c.opts.FeatureGates == "" {
		return nil
	}
	return []string{"--feature-gates=" + c.opts.FeatureGates}
}

func (c *Cluster) schedulerArgs() []string {
	return c.commonArgs(c.ports.scheduler)
}

func (c *Cluster) controllerManagerArgs() []string {
	return append(c.commonArgs(c.ports.controllerManager),
		// The service-account and token controllers need the signing key
		// and the CA to put into each namespace's kube-root-ca.crt.
		"--service-account-private-key-file="+c.pki.saKeyFile,
		"--root-ca-file="+c.pki.caCertFile,
		"--use-service-account-credentials=false",
		// Node lifecycle would taint and evict from nodes with no kubelet
		// heartbeat; node IPAM needs a cluster CIDR nobody uses here.
		"--controllers=*,-node-lifecycle-controller,-node-ipam-controller",
	)
}
