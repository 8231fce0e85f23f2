// SPDX-License-Identifier: Apache-2.0

// Package certmint mints the X.509 certificates this project makes for
// itself: a certificate authority, leaves it signs, and a self-signed
// leaf. Every key is ECDSA P-256 (fast to make on a small machine, and
// what crypto/tls prefers), every serial number 127 random bits
// (RFC 5280 section 4.1.2.2 asks for at most 20 octets and unpredictable
// serials), and the caller states each certificate's validity.
//
// k8s.io/client-go/util/cert does not fit: its NewSelfSignedCACert fixes
// the lifetime at ten years from the wall clock, and it signs no leaf
// with a CA of the caller's.
package certmint

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Spec is what a certificate says.
type Spec struct {
	// CommonName and Organization make the subject.
	CommonName   string
	Organization []string
	// DNSNames and IPAddresses are a leaf's subject alternative names.
	DNSNames    []string
	IPAddresses []net.IP
	// Usage is a leaf's extended key usage (x509.ExtKeyUsageServerAuth,
	// ClientAuth); a CA's is ignored.
	Usage []x509.ExtKeyUsage
	// NotBefore and NotAfter bound the validity; NotAfter must be later.
	NotBefore, NotAfter time.Time
}

// Pair is a certificate with its private key, parsed and PEM-encoded
// (CertPEM a "CERTIFICATE" block, KeyPEM an "EC PRIVATE KEY" block, as a
// kubernetes.io/tls Secret's tls.crt and tls.key hold them).
type Pair struct {
	Cert    *x509.Certificate
	Key     *ecdsa.PrivateKey
	CertPEM []byte
	KeyPEM  []byte
}

// TLS returns the pair as crypto/tls serves it.
func (p Pair) TLS() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{p.Cert.Raw}, PrivateKey: p.Key, Leaf: p.Cert}
}

// NewCA makes a self-signed CA that signs leaves only (path length
// zero). The error is the random source's or a Spec that crypto/x509
// refuses.
func NewCA(s Spec) (Pair, error) {
	tmpl := template(s)
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid, tmpl.IsCA, tmpl.MaxPathLenZero = true, true, true
	tmpl.ExtKeyUsage = nil
	return mint(tmpl, nil)
}

// Sign makes a leaf for s signed by ca. The error says when ca is not a
// CA, or is the random source's or crypto/x509's.
func Sign(ca Pair, s Spec) (Pair, error) {
	if ca.Cert == nil || ca.Key == nil || !ca.Cert.IsCA {
		return Pair{}, errors.New("certmint: the signer is not a CA with its key")
	}
	return mint(template(s), &ca)
}

// SelfSigned makes a leaf for s that signs itself: what a server presents
// until it has one from its CA.
func SelfSigned(s Spec) (Pair, error) { return mint(template(s), nil) }

// Parse reads a PEM certificate and its PEM ECDSA key (SEC 1, as Pair's
// KeyPEM holds it) and checks that the key is the certificate's. Errors name which of the
// two is wrong.
func Parse(certPEM, keyPEM []byte) (Pair, error) {
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return Pair{}, errors.New("the certificate holds no PEM certificate")
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return Pair{}, fmt.Errorf("the certificate: %w", err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return Pair{}, errors.New("the key holds no PEM key")
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return Pair{}, fmt.Errorf("the key: %w", err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return Pair{}, errors.New("the key is not the certificate's")
	}
	return Pair{Cert: cert, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

func template(s Spec) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: s.CommonName, Organization: s.Organization},
		DNSNames:    s.DNSNames,
		IPAddresses: s.IPAddresses,
		NotBefore:   s.NotBefore,
		NotAfter:    s.NotAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: s.Usage,
	}
}

// mint makes a key and a certificate from tmpl, signed by ca or, when ca
// is nil, by itself.
func mint(tmpl *x509.Certificate, ca *Pair) (Pair, error) {
	if !tmpl.NotAfter.After(tmpl.NotBefore) {
		return Pair{}, fmt.Errorf("certmint: %q would be valid from %s to %s", tmpl.Subject.CommonName, tmpl.NotBefore, tmpl.NotAfter)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)); err != nil {
		return Pair{}, err
	}
	parent, signer := tmpl, any(key)
	if ca != nil {
		parent, signer = ca.Cert, ca.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return Pair{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return Pair{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}
