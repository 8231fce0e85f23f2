// SPDX-License-Identifier: Apache-2.0

package certmint

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"
)

func TestCASignsLeavesThatVerify(t *testing.T) {
	now := time.Now()
	ca, err := NewCA(Spec{CommonName: "test-ca", Organization: []string{"liken"}, NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA || !ca.Cert.MaxPathLenZero || ca.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("CA: IsCA %v, MaxPathLenZero %v, usage %v", ca.Cert.IsCA, ca.Cert.MaxPathLenZero, ca.Cert.KeyUsage)
	}
	leaf, err := Sign(ca, Spec{CommonName: "svc", DNSNames: []string{"svc.ns"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, NotBefore: now.Add(-time.Minute), NotAfter: now.Add(30 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, name := range []string{"svc.ns", "127.0.0.1"} {
		if _, err := leaf.Cert.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Errorf("leaf for %s: %v", name, err)
		}
	}
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{DNSName: "other", Roots: roots}); err == nil {
		t.Error("the leaf verified for a name it does not carry")
	}
	if leaf.Cert.SerialNumber.Cmp(ca.Cert.SerialNumber) == 0 || leaf.Cert.SerialNumber.BitLen() > 127 {
		t.Errorf("serials %v and %v", ca.Cert.SerialNumber, leaf.Cert.SerialNumber)
	}
	back, err := Parse(leaf.CertPEM, leaf.KeyPEM)
	if err != nil || !back.Cert.Equal(leaf.Cert) || !back.Key.Equal(leaf.Key) {
		t.Errorf("Parse of the leaf's PEM: %v", err)
	}
	if _, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM); err != nil {
		t.Errorf("crypto/tls refuses the PEM pair: %v", err)
	}
	served := leaf.TLS()
	if served.Leaf != leaf.Cert || len(served.Certificate) != 1 {
		t.Errorf("TLS(): %+v", served)
	}
}

func TestRefusals(t *testing.T) {
	now := time.Now()
	valid := Spec{CommonName: "x", NotBefore: now, NotAfter: now.Add(time.Hour)}
	self, err := SelfSigned(valid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Sign(self, valid); err == nil || !strings.Contains(err.Error(), "not a CA") {
		t.Errorf("a leaf signed by a leaf: %v", err)
	}
	if _, err := SelfSigned(Spec{CommonName: "backwards", NotBefore: now, NotAfter: now}); err == nil || !strings.Contains(err.Error(), "backwards") {
		t.Errorf("an empty validity: %v", err)
	}
	other, err := SelfSigned(valid)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cert, key []byte
		want      string
	}{
		{self.CertPEM, other.KeyPEM, "not the certificate's"},
		{[]byte("junk"), self.KeyPEM, "no PEM certificate"},
		{self.CertPEM, []byte("junk"), "no PEM key"},
		{self.KeyPEM, self.KeyPEM, "no PEM certificate"},
	} {
		if _, err := Parse(c.cert, c.key); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse: %v, want %q", err, c.want)
		}
	}
}
