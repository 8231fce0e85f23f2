// SPDX-License-Identifier: Apache-2.0

// Package secretvolume is test scaffolding for a TLS Secret volume: a CA
// and leaves as audio-api mints them for the capture container, and the
// volume updated the way the kubelet updates it. Of this module it
// imports only internal/certmint, so the packages it serves may use it in
// their own tests.
package secretvolume

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/certmint"
)

// CA is a certificate authority that signs capture leaves, as
// audio-api's does: ECDSA P-256, valid for a day.
type CA struct {
	// Cert is the CA certificate and PEM its PEM encoding (a Secret's
	// ca.crt).
	Cert *x509.Certificate
	PEM  []byte
	pair certmint.Pair
}

// NewCA returns a new CA whose subject is name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	p, err := certmint.NewCA(certmint.Spec{CommonName: name, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: p.Cert, PEM: p.CertPEM, pair: p}
}

// Leaf returns a PEM server certificate and key for the DNS names names
// (the first is also the subject), signed by ca and valid for a day.
func (ca *CA) Leaf(t testing.TB, names ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	p, err := certmint.Sign(ca.pair, certmint.Spec{CommonName: names[0], DNSNames: names, Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return p.CertPEM, p.KeyPEM
}

// WriteSecretVolume updates dir as the kubelet updates a Secret volume
// (pkg/volume/util/atomic_writer.go): the files go into a fresh
// timestamped directory, "..data" is swapped to it by a rename, and each
// file name is a symlink through "..data".
func WriteSecretVolume(t testing.TB, dir string, files map[string][]byte) {
	t.Helper()
	ts := filepath.Join(dir, ".."+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(ts, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for name := range files {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err != nil {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				t.Fatal(err)
			}
		}
	}
}
