// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the PEM encodings of everything the control plane needs, and
// the paths they were written to inside the work directory.
type pki struct {
	caCert, adminCert, adminKey []byte
	ca                          *x509.Certificate
	caKey                       crypto.Signer
	dir                         string

	caCertFile, servingCertFile, servingKeyFile string
	saKeyFile, saPubFile                        string
}

// certValidity is long enough for a hand-run local cluster left up for
// days; these certificates never leave the machine.
const certValidity = 365 * 24 * time.Hour

// newPKI generates a CA, a serving certificate for 127.0.0.1/localhost, an
// admin client certificate in system:masters and the service-account RSA
// key pair, and writes them under dir/pki.
func newPKI(dir string) (*pki, error) {
	dir = filepath.Join(dir, "pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// ECDSA for the TLS keys because RSA generation is slow on two cores;
	// the service-account key stays RSA, the algorithm the API server
	// signs tokens with by default.
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now().Add(-time.Hour) // tolerate small clock skew
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "liken-e2e-ca"},
		NotBefore:             now,
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := sign(caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}

	servingKey, servingDER, err := leaf(ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:   now,
		NotAfter:    now.Add(certValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 0, 0, 1)},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	})
	if err != nil {
		return nil, err
	}
	adminKey, adminDER, err := leaf(ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		NotBefore:   now,
		NotAfter:    now.Add(certValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}

	p := &pki{
		ca:              ca,
		caKey:           caKey,
		dir:             dir,
		caCert:          pemBlock("CERTIFICATE", caDER),
		adminCert:       pemBlock("CERTIFICATE", adminDER),
		caCertFile:      filepath.Join(dir, "ca.crt"),
		servingCertFile: filepath.Join(dir, "serving.crt"),
		servingKeyFile:  filepath.Join(dir, "serving.key"),
		saKeyFile:       filepath.Join(dir, "sa.key"),
		saPubFile:       filepath.Join(dir, "sa.pub"),
	}
	if p.adminKey, err = keyPEM(adminKey); err != nil {
		return nil, err
	}
	servingKeyPEM, err := keyPEM(servingKey)
	if err != nil {
		return nil, err
	}
	saKeyPEM, err := keyPEM(saKey)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		p.caCertFile:                    p.caCert,
		p.servingCertFile:               pemBlock("CERTIFICATE", servingDER),
		p.servingKeyFile:                servingKeyPEM,
		p.saKeyFile:                     saKeyPEM,
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

// leaf creates a fresh ECDSA key and a certificate for it signed by the CA.
func leaf(ca *x509.Certificate, caKey crypto.Signer, tmpl *x509.Certificate) (crypto.Signer, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := sign(tmpl, ca, &key.PublicKey, caKey)
	return key, der, err
}

func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, signer crypto.Signer) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, fmt.Errorf("harness: certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	return der, nil
}

func keyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pemBlock("PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// clientCert issues a client certificate for user in groups, signed by the
// cluster's CA, and returns its certificate and key in PEM.
func (p *pki) clientCert(user string, groups []string) (certPEM, keyOut []byte, err error) {
	now := time.Now().Add(-time.Hour)
	key, der, err := leaf(p.ca, p.caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		NotBefore:   now,
		NotAfter:    now.Add(certValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, nil, err
	}
	k, err := keyPEM(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), k, nil
}
