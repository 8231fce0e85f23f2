// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/certmint"
)

// The files of a kubernetes.io/tls Secret as audio-api writes the capture
// leaf (ca.crt is the CA that signed it).
const (
	FileCert = "tls.crt"
	FileKey  = "tls.key"
	FileCA   = "ca.crt"
)

// ServerName is the name the capture leaf is for and audio-api verifies.
const ServerName = "audio-capture"

// reloadBackstop is the period of the check that runs when no file event
// arrives (the directory appeared after the watch was set, an event was
// lost).
const reloadBackstop = 30 * time.Second

// Certificates serves the container's certificate: one it made itself
// until the Secret volume holds a leaf, then the leaf, reloaded whenever
// the files change. A Secret volume is updated by the kubelet swapping
// its "..data" symlink, so the watch is on the directory, not the files.
type Certificates struct {
	dir     string
	current atomic.Pointer[tls.Certificate]
	minted  atomic.Bool
	loaded  []byte // the cert and key last loaded, to skip no-op reloads
	mu      sync.Mutex
	// onLoad, when set, is called after every load attempt with its
	// error (nil: a leaf was loaded).
	onLoad func(error)
}

// NewCertificates returns Certificates for the Secret volume dir, serving
// a fresh self-signed certificate for ServerName until Load finds a leaf.
// onLoad (may be nil) hears every load attempt's outcome.
func NewCertificates(dir string, onLoad func(error)) (*Certificates, error) {
	self, err := selfSigned()
	if err != nil {
		return nil, err
	}
	c := &Certificates{dir: dir, onLoad: onLoad}
	c.current.Store(self)
	return c, nil
}

// GetCertificate is the tls.Config hook: the current certificate.
func (c *Certificates) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.current.Load(), nil
}

// Minted reports whether the served certificate is the Secret's leaf.
func (c *Certificates) Minted() bool { return c.minted.Load() }

// ErrNoLeaf is returned by Load while the directory holds no leaf.
var ErrNoLeaf = errors.New("no leaf in the Secret volume yet")

// Load reads tls.crt, tls.key and ca.crt and serves the pair when it is
// valid: the key matches the certificate, the certificate is for
// ServerName and is signed by ca.crt (when the Secret has one), and it has
// not expired. A pair that fails any of these is refused with an error
// naming why, and the certificate served before stays. An absent
// tls.crt is ErrNoLeaf.
func (c *Certificates) Load() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.load()
	if c.onLoad != nil && !errors.Is(err, errNoChange) {
		c.onLoad(err)
	}
	if errors.Is(err, errNoChange) {
		return nil
	}
	return err
}

var errNoChange = errors.New("unchanged")

func (c *Certificates) load() error {
	certPEM, err := os.ReadFile(filepath.Join(c.dir, FileCert))
	if errors.Is(err, os.ErrNotExist) {
		return ErrNoLeaf
	}
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(filepath.Join(c.dir, FileKey))
	if err != nil {
		return fmt.Errorf("%s beside %s: %w", FileKey, FileCert, err)
	}
	both := append(append([]byte{}, certPEM...), keyPEM...)
	if bytes.Equal(both, c.loaded) {
		return errNoChange
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("%s and %s: %w", FileCert, FileKey, err)
	}
	leaf := pair.Leaf
	if err := leaf.VerifyHostname(ServerName); err != nil {
		return fmt.Errorf("%s: %w", FileCert, err)
	}
	if now := time.Now(); now.After(leaf.NotAfter) || now.Before(leaf.NotBefore) {
		return fmt.Errorf("%s is valid from %s to %s, not now", FileCert, leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if caPEM, err := os.ReadFile(filepath.Join(c.dir, FileCA)); err == nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return fmt.Errorf("%s holds no certificate", FileCA)
		}
		inter := x509.NewCertPool()
		for _, der := range pair.Certificate[1:] {
			if ic, err := x509.ParseCertificate(der); err == nil {
				inter.AddCert(ic)
			}
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, DNSName: ServerName,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return fmt.Errorf("%s is not signed by the CA in %s: %w", FileCert, FileCA, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	c.current.Store(&pair)
	c.loaded = both
	c.minted.Store(true)
	return nil
}

// Watch loads the leaf now, then again on every change in the directory
// and every 30 s, until ctx ends. A directory that cannot be watched
// (not there yet) is checked on the backstop alone. Load errors are
// logged (with the reason) and the certificate served before stays.
func (c *Certificates) Watch(ctx context.Context) {
	logger := klog.FromContext(ctx)
	try := func() {
		if err := c.Load(); err != nil && !errors.Is(err, ErrNoLeaf) {
			logger.Error(err, "Capture leaf refused; serving the certificate before it", "dir", c.dir)
		} else if err == nil && c.Minted() {
			logger.V(2).Info("Capture leaf loaded", "dir", c.dir)
		}
	}
	try()
	var events <-chan fsnotify.Event
	if w, err := fsnotify.NewWatcher(); err != nil {
		logger.Error(err, "No file watch; the leaf is checked every 30 s")
	} else {
		defer w.Close()
		if err := w.Add(c.dir); err != nil {
			logger.Info("The leaf's directory cannot be watched; it is checked every 30 s", "dir", c.dir, "reason", err.Error())
		} else {
			events = w.Events
		}
	}
	tick := time.NewTicker(reloadBackstop)
	defer tick.Stop()
	// A Secret update is several renames in a row; one reload after they
	// settle reads the new set whole.
	var settle <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-events:
			settle = time.After(100 * time.Millisecond)
		case <-settle:
			settle = nil
			try()
		case <-tick.C:
			try()
		}
	}
}

// selfSigned makes the certificate served until a leaf is loaded: for
// ServerName, valid for a year. audio-api trusts only its own CA, so it
// refuses this one, and the refusal is its 503.
func selfSigned() (*tls.Certificate, error) {
	now := time.Now()
	p, err := certmint.SelfSigned(certmint.Spec{CommonName: ServerName + " (self-signed)", DNSNames: []string{ServerName},
		Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, NotBefore: now.Add(-time.Minute), NotAfter: now.AddDate(1, 0, 0)})
	if err != nil {
		return nil, err
	}
	cert := p.TLS()
	return &cert, nil
}
