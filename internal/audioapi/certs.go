// SPDX-License-Identifier: Apache-2.0

package audioapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/liken-sh/operators/internal/certmint"
)

// The objects audio-api keeps in its own namespace, by name; the RBAC in
// deploy/audio/api.yaml grants exactly these.
const (
	// ServingSecret holds the CA (ca.crt, ca.key) and audio-api's own
	// serving leaf (tls.crt, tls.key), type kubernetes.io/tls.
	ServingSecret = "audio-api-tls"
	// CAConfigMap publishes the CA's certificate alone, key ca.crt, for
	// clients (kubectl liken audio) to trust.
	CAConfigMap = "audio-api-ca"
	// CaptureSecret holds the capture containers' leaf (tls.crt, tls.key,
	// ca.crt); deploy/audio/operator.yaml mounts it as an optional volume.
	CaptureSecret = "audio-capture-server"
	// CaptureServerName is the capture leaf's CN and only DNS SAN, and the
	// TLS ServerName audio-api dials capture containers with.
	CaptureServerName = "audio-capture"
	// MintedBy is the annotation on the Secrets audio-api wrote itself
	// (value "audio-api"); a Secret without it belongs to someone else.
	MintedBy = "audio.liken.sh/minted-by"
)

// Default lifetimes: the CA ten years, each leaf one year. A leaf is
// signed again once less than a third of its lifetime is left.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultLeafValidity = 365 * 24 * time.Hour
)

// CertConfig configures a [Certs].
type CertConfig struct {
	// Client reads and writes the Secrets and the ConfigMap.
	Client kubernetes.Interface
	// Namespace holds them and the Service.
	Namespace string
	// Service is the Service's name ("audio-api"); the serving leaf
	// names it in every DNS form a client in the cluster dials.
	Service string
	// CAValidity and LeafValidity default to DefaultCAValidity and
	// DefaultLeafValidity.
	CAValidity, LeafValidity time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
}

// Material is the TLS state one [Certs.Sync] pass settled on.
type Material struct {
	// Serving is audio-api's own certificate and key.
	Serving tls.Certificate
	// CAPEM is the CA certificate (PEM) clients and audio-api trust;
	// capture containers must present a leaf it signed. Empty when the
	// Secret someone else manages has no ca.crt.
	CAPEM []byte
	// CAPool holds CAPEM's certificates.
	CAPool *x509.CertPool
	// Managed is true when audio-api holds the CA key and signs leaves.
	Managed bool
	// NotAfter is the nearest expiry among the CA, the serving leaf and
	// the capture leaf.
	NotAfter time.Time
	// CaptureProblem, if not empty, says why the capture Secret was left
	// as it is (someone else's leaf, not signed by CAPEM).
	CaptureProblem string
}

// caKey is the Secret key of the CA's private key, which only a Secret
// audio-api minted has.
const caKey = "ca.key"

func (c *CertConfig) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *CertConfig) caValidity() time.Duration {
	if c.CAValidity > 0 {
		return c.CAValidity
	}
	return DefaultCAValidity
}

func (c *CertConfig) leafValidity() time.Duration {
	if c.LeafValidity > 0 {
		return c.LeafValidity
	}
	return DefaultLeafValidity
}

// servingNames are the DNS names of the Service as a client in the
// cluster may spell it, and as kubectl liken audio dials it through a
// port-forward (ServerName <service>.<namespace>.svc).
func (c *CertConfig) servingNames() []string {
	s, ns := c.Service, c.Namespace
	return []string{s, s + "." + ns, s + "." + ns + ".svc", s + "." + ns + ".svc.cluster.local"}
}

// authority is audio-api's CA: its certificate and key.
type authority = certmint.Pair

// Sync makes the stored material complete and current, once: it mints
// the CA and serving leaf into ServingSecret when that is absent,
// publishes the CA in CAConfigMap, and signs the capture leaf into
// CaptureSecret, renewing any leaf past two thirds of its lifetime or
// signed by another CA. A create that loses a race to another replica
// adopts what the winner stored; an update that loses retries on what is
// stored now. A ServingSecret without ca.key is someone else's (e.g.
// cert-manager): its leaf is served and nothing is signed. Errors: the
// API refused a read or write, or a stored Secret cannot be parsed (it is
// then left untouched and the error names the key).
func (c *CertConfig) Sync(ctx context.Context) (*Material, error) {
	var m *Material
	var ca *authority
	var err error
	for attempt := 0; ; attempt++ {
		m, ca, err = c.syncServing(ctx)
		if err == nil || attempt == 3 || !retryable(err) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	if len(m.CAPEM) > 0 {
		for attempt := 0; ; attempt++ {
			err = c.syncConfigMap(ctx, m.CAPEM)
			if err == nil || attempt == 3 || !retryable(err) {
				break
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if ca == nil {
		return m, nil
	}
	for attempt := 0; ; attempt++ {
		err = c.syncCapture(ctx, ca, m)
		if err == nil || attempt == 3 || !retryable(err) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// retryable is a lost race: another writer created or updated first.
func retryable(err error) bool { return apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) }

func (c *CertConfig) secrets() secretClient {
	return c.Client.CoreV1().Secrets(c.Namespace)
}

type secretClient = interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error)
	Create(ctx context.Context, s *corev1.Secret, opts metav1.CreateOptions) (*corev1.Secret, error)
	Update(ctx context.Context, s *corev1.Secret, opts metav1.UpdateOptions) (*corev1.Secret, error)
}

// syncServing reads (or mints) ServingSecret and returns the material
// with the CA, or a nil CA when the Secret is someone else's.
func (c *CertConfig) syncServing(ctx context.Context) (*Material, *authority, error) {
	sec, err := c.secrets().Get(ctx, ServingSecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		ca, err := c.mintCA()
		if err != nil {
			return nil, nil, err
		}
		certPEM, keyPEM, err := c.mintLeaf(ca, c.Service, c.servingNames(), x509.ExtKeyUsageServerAuth)
		if err != nil {
			return nil, nil, err
		}
		sec = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: ServingSecret, Namespace: c.Namespace, Annotations: map[string]string{MintedBy: "audio-api"}},
			Type:       corev1.SecretTypeTLS,
			Data: map[string][]byte{
				corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM,
				"ca.crt": ca.CertPEM, caKey: ca.KeyPEM,
			},
		}
		if _, err := c.secrets().Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			return nil, nil, fmt.Errorf("creating Secret %s/%s: %w", c.Namespace, ServingSecret, err)
		}
		// Parsed below like any stored Secret.
	} else if err != nil {
		return nil, nil, fmt.Errorf("reading Secret %s/%s: %w", c.Namespace, ServingSecret, err)
	}

	where := c.Namespace + "/" + ServingSecret
	if _, ok := sec.Data[caKey]; !ok {
		// Someone else's: served as it is.
		cert, err := tls.X509KeyPair(sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			return nil, nil, fmt.Errorf("Secret %s (no %s: managed by someone else): tls.crt/tls.key: %w", where, caKey, err)
		}
		m := &Material{Serving: cert, NotAfter: cert.Leaf.NotAfter}
		if caPEM := sec.Data["ca.crt"]; len(caPEM) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(caPEM) {
				return nil, nil, fmt.Errorf("Secret %s: ca.crt holds no PEM certificate", where)
			}
			m.CAPEM, m.CAPool = caPEM, pool
		}
		return m, nil, nil
	}

	ca, err := parseAuthority(sec.Data["ca.crt"], sec.Data[caKey])
	if err != nil {
		return nil, nil, fmt.Errorf("Secret %s: %w", where, err)
	}
	cert, err := tls.X509KeyPair(sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey])
	if err != nil || c.renewalDue(cert.Leaf, ca, c.servingNames()) {
		// Ours to sign again: an unreadable or failing leaf loses nothing,
		// the CA and its key stay.
		certPEM, keyPEM, err := c.mintLeaf(ca, c.Service, c.servingNames(), x509.ExtKeyUsageServerAuth)
		if err != nil {
			return nil, nil, err
		}
		sec = sec.DeepCopy()
		sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey] = certPEM, keyPEM
		if _, err := c.secrets().Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
			return nil, nil, fmt.Errorf("renewing the leaf in Secret %s: %w", where, err)
		}
		if cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			return nil, nil, err
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	m := &Material{Serving: cert, CAPEM: ca.CertPEM, CAPool: pool, Managed: true, NotAfter: earliest(cert.Leaf.NotAfter, ca.Cert.NotAfter)}
	return m, ca, nil
}

// syncConfigMap publishes caPEM as CAConfigMap's ca.crt.
func (c *CertConfig) syncConfigMap(ctx context.Context, caPEM []byte) error {
	cms := c.Client.CoreV1().ConfigMaps(c.Namespace)
	cm, err := cms.Get(ctx, CAConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: CAConfigMap, Namespace: c.Namespace},
			Data:       map[string]string{"ca.crt": string(caPEM)},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating ConfigMap %s/%s: %w", c.Namespace, CAConfigMap, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ConfigMap %s/%s: %w", c.Namespace, CAConfigMap, err)
	}
	if cm.Data["ca.crt"] == string(caPEM) {
		return nil
	}
	cm = cm.DeepCopy()
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["ca.crt"] = string(caPEM)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating ConfigMap %s/%s: %w", c.Namespace, CAConfigMap, err)
	}
	return nil
}

// syncCapture signs the capture leaf into CaptureSecret when it is
// absent, due, or signed by another CA in a Secret audio-api minted. A
// Secret someone else wrote (no MintedBy) is left alone, and m says why
// taps will fail when its leaf is not signed by the CA.
func (c *CertConfig) syncCapture(ctx context.Context, ca *authority, m *Material) error {
	names := []string{CaptureServerName}
	where := c.Namespace + "/" + CaptureSecret
	sec, err := c.secrets().Get(ctx, CaptureSecret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		sec = nil // the client returns an empty object with the error
	case err != nil:
		return fmt.Errorf("reading Secret %s: %w", where, err)
	}
	if sec != nil {
		leaf, perr := parseLeaf(sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey])
		if sec.Annotations[MintedBy] != "audio-api" {
			if perr != nil || !signedBy(leaf, ca) {
				m.CaptureProblem = fmt.Sprintf("Secret %s was not minted by audio-api and its leaf is not signed by audio-api's CA (%v); it is left as it is", where, perr)
			} else {
				m.NotAfter = earliest(m.NotAfter, leaf.NotAfter)
			}
			return nil
		}
		if perr == nil && !c.renewalDue(leaf, ca, names) && bytes.Equal(sec.Data["ca.crt"], ca.CertPEM) {
			m.NotAfter = earliest(m.NotAfter, leaf.NotAfter)
			return nil
		}
	}
	certPEM, keyPEM, err := c.mintLeaf(ca, CaptureServerName, names, x509.ExtKeyUsageServerAuth)
	if err != nil {
		return err
	}
	data := map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, "ca.crt": ca.CertPEM}
	if sec == nil {
		_, err = c.secrets().Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: CaptureSecret, Namespace: c.Namespace, Annotations: map[string]string{MintedBy: "audio-api"}},
			Type:       corev1.SecretTypeTLS, Data: data,
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating Secret %s: %w", where, err)
		}
	} else {
		sec = sec.DeepCopy()
		sec.Data = data
		if _, err = c.secrets().Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("renewing the leaf in Secret %s: %w", where, err)
		}
	}
	leaf, _ := parseLeaf(certPEM, keyPEM)
	m.NotAfter = earliest(m.NotAfter, leaf.NotAfter)
	return nil
}

// renewalDue is true when leaf must be signed again: not signed by ca,
// missing one of names, or less than a third of its lifetime left.
func (c *CertConfig) renewalDue(leaf *x509.Certificate, ca *authority, names []string) bool {
	if leaf == nil || !signedBy(leaf, ca) {
		return true
	}
	for _, n := range names {
		if leaf.VerifyHostname(n) != nil {
			return true
		}
	}
	life := leaf.NotAfter.Sub(leaf.NotBefore)
	return leaf.NotAfter.Sub(c.now()) < life/3
}

// signedBy checks leaf's signature against ca's key (not its validity
// period, which renewalDue judges).
func signedBy(leaf *x509.Certificate, ca *authority) bool {
	return leaf != nil && leaf.CheckSignatureFrom(ca.Cert) == nil
}

func parseLeaf(certPEM, keyPEM []byte) (*x509.Certificate, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return cert.Leaf, nil
}

func parseAuthority(certPEM, keyPEM []byte) (*authority, error) {
	ca, err := certmint.Parse(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("ca.crt and ca.key: %w", err)
	}
	if !ca.Cert.IsCA {
		return nil, errors.New("ca.crt is not a CA certificate")
	}
	return &ca, nil
}

// backdate is how far before now a certificate's validity starts, for
// clocks a little behind: five minutes, or a tenth of a short lifetime.
func backdate(validity time.Duration) time.Duration { return min(5*time.Minute, validity/10) }

// mintCA makes a new CA for CAValidity.
func (c *CertConfig) mintCA() (*authority, error) {
	now, v := c.now(), c.caValidity()
	ca, err := certmint.NewCA(certmint.Spec{CommonName: "audio-api-ca", Organization: []string{"audio.liken.sh"},
		NotBefore: now.Add(-backdate(v)), NotAfter: now.Add(v)})
	if err != nil {
		return nil, err
	}
	return &ca, nil
}

// mintLeaf signs a new leaf for LeafValidity with cn and the DNS names,
// returning PEM certificate and key.
func (c *CertConfig) mintLeaf(ca *authority, cn string, dns []string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
	now, v := c.now(), c.leafValidity()
	leaf, err := certmint.Sign(*ca, certmint.Spec{CommonName: cn, DNSNames: dns, Usage: []x509.ExtKeyUsage{usage},
		NotBefore: now.Add(-backdate(v)), NotAfter: now.Add(v)})
	return leaf.CertPEM, leaf.KeyPEM, err
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
