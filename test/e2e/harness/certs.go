// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/liken-sh/operators/internal/certmint"
)

// pki holds the PEM encodings of everything the control plane needs, and
// the paths they were written to inside the work directory.
type pki struct {
	caCert, adminCert, adminKey []byte
	ca                          certmint.Pair
	dir                         string

	caCertFile, servingCertFile, servingKeyFile string
	saKeyFile, saPubFile                        string
}

// certValidity is long enough for a hand-run local cluster left up for
// days; these certificates never leave the machine.
const certValidity = 365 * 24 * time.Hour

// validity is from an hour ago (tolerating small clock skew) for
// certValidity.
func validity(s certmint.Spec) certmint.Spec {
	s.NotBefore = time.Now().Add(-time.Hour)
	s.NotAfter = s.NotBefore.Add(certValidity)
	return s
}

// newPKI generates a CA, a serving certificate for 127.0.0.1/localhost, an
// admin client certificate in system:masters and the service-account RSA
// key pair, and writes them under dir/pki.
func newPKI(dir string) (*pki, error) {
	dir = filepath.Join(dir, "pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// ECDSA (certmint's keys) for TLS because RSA generation is slow on
	// two cores; the service-account key stays RSA, the algorithm the API
	// server signs tokens with by default.
	ca, err := certmint.NewCA(validity(certmint.Spec{CommonName: "liken-e2e-ca"}))
	if err != nil {
		return nil, err
	}
	serving, err := certmint.Sign(ca, validity(certmint.Spec{
		CommonName:  "kube-apiserver",
		Usage:       []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 0, 0, 1)},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}))
	if err != nil {
		return nil, err
	}
	admin, err := certmint.Sign(ca, validity(certmint.Spec{CommonName: "admin", Organization: []string{"system:masters"},
		Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}))
	if err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}

	p := &pki{
		ca:              ca,
		dir:             dir,
		caCert:          ca.CertPEM,
		adminCert:       admin.CertPEM,
		adminKey:        admin.KeyPEM,
		caCertFile:      filepath.Join(dir, "ca.crt"),
		servingCertFile: filepath.Join(dir, "serving.crt"),
		servingKeyFile:  filepath.Join(dir, "serving.key"),
		saKeyFile:       filepath.Join(dir, "sa.key"),
		saPubFile:       filepath.Join(dir, "sa.pub"),
	}
	saKeyDER, err := x509.MarshalPKCS8PrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		p.caCertFile:                    p.caCert,
		p.servingCertFile:               serving.CertPEM,
		p.servingKeyFile:                serving.KeyPEM,
		p.saKeyFile:                     pemBlock("PRIVATE KEY", saKeyDER),
		p.saPubFile:                     pemBlock("PUBLIC KEY", saPubDER),
		filepath.Join(dir, "admin.crt"): p.adminCert,
		filepath.Join(dir, "admin.key"): p.adminKey,
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// clientCert issues a client certificate for user in groups, signed by the
// cluster's CA, and returns its certificate and key in PEM.
func (p *pki) clientCert(user string, groups []string) (certPEM, keyOut []byte, err error) {
	c, err := certmint.Sign(p.ca, validity(certmint.Spec{CommonName: user, Organization: groups,
		Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}))
	return c.CertPEM, c.KeyPEM, err
}
