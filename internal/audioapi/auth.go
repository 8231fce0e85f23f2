// SPDX-License-Identifier: Apache-2.0

package audioapi

// Delegated authentication and authorization, as an extension API server
// does it (the API server's --client-ca-file published in
// kube-system/extension-apiserver-authentication, TokenReview,
// SubjectAccessReview). k8s.io/apiserver has this as its delegating
// authenticator and authorizer, but those link OpenTelemetry, the audit
// machinery, the CEL compiler and component-base's global metrics
// registry, and this package is linked into the one binary every
// container of the audio operator's pod runs. The three API calls below
// are what that machinery makes.

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/jwtexp"
)

// The ConfigMap in which the API server publishes the CA that signs the
// client certificates it accepts (key client-ca-file).
const (
	AuthenticationNamespace = "kube-system"
	AuthenticationConfigMap = "extension-apiserver-authentication"
	clientCAKey             = "client-ca-file"
)

// tokenCacheMax bounds how long a token the TokenReview accepted is taken
// without asking again: a token revoked in the meantime keeps working
// for up to this long.
const tokenCacheMax = 60 * time.Second

// refusalCacheMax is how long a token the TokenReview refused is refused
// again without asking: a client repeating a forged token costs the API
// server one pair of reviews per this long, not one per request.
const refusalCacheMax = 10 * time.Second

// tokenCacheEntries bounds each token cache (accepted, refused); a full
// cache is emptied and starts again.
const tokenCacheEntries = 1024

// Reviews on behalf of one client address (a token not in the caches
// costs one or two TokenReviews): reviewRate a second on average, bursts
// of reviewBurst. Past that the request is answered 429 without asking
// the API server, so whoever reaches audio-api cannot turn it into a
// load on the API server. reviewClients bounds the addresses tracked.
const (
	reviewRate    = 5
	reviewBurst   = 10
	reviewClients = 4096
)

// User is an authenticated caller, as the API server names it.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
	// Method is "x509" or "token", for logs.
	Method string
}

// AuthError is a request that could not be authenticated: Missing when it
// carried no credential at all, else the reason the credential was
// refused (the API server's own words for a token).
type AuthError struct {
	Missing bool
	Reason  string
}

func (e *AuthError) Error() string { return e.Reason }

// ThrottledError is a request whose token would need a TokenReview while
// its client address has used its share of reviews; RetryAfter is when
// the next one is allowed.
type ThrottledError struct {
	Client     string
	RetryAfter time.Duration
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("too many tokens to check from %s; try again in %s", e.Client, e.RetryAfter.Round(time.Second))
}

// Authenticator authenticates requests by client certificate (against
// the cluster's client CA, reloaded when the ConfigMap changes) or else
// by bearer token (TokenReview for Audience, else for the API server's
// own audiences).
type Authenticator struct {
	Client   kubernetes.Interface
	Audience string

	clientCA atomic.Pointer[x509.CertPool]
	mu       sync.Mutex
	tokens   map[[32]byte]tokenEntry
	refused  map[[32]byte]tokenEntry
	limiters map[string]*rate.Limiter
}

// tokenEntry is a cached answer: user for an accepted token, refusal
// for a refused one.
type tokenEntry struct {
	user    *User
	refusal *AuthError
	expires time.Time
}

// Start watches the client CA ConfigMap by name until ctx ends. Without
// it (or while the ConfigMap is absent or unreadable) no client
// certificate is accepted and tokens still are.
func (a *Authenticator) Start(ctx context.Context) {
	f := informers.NewSharedInformerFactoryWithOptions(a.Client, 0,
		informers.WithNamespace(AuthenticationNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", AuthenticationConfigMap).String()
		}))
	load := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(cm.Data[clientCAKey])) {
			klog.FromContext(ctx).Info("The cluster's client CA ConfigMap holds no certificate; client certificates are refused",
				"configMap", AuthenticationNamespace+"/"+AuthenticationConfigMap, "key", clientCAKey)
			a.clientCA.Store(nil)
			return
		}
		a.clientCA.Store(pool)
	}
	_, _ = f.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    load,
		UpdateFunc: func(_, n any) { load(n) },
		DeleteFunc: func(any) { a.clientCA.Store(nil) },
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
}

// Authenticate returns the caller of r, or an *AuthError. A client
// certificate is taken first; a certificate the client CA did not sign
// is refused rather than passed over for a token.
func (a *Authenticator) Authenticate(ctx context.Context, r *http.Request) (*User, error) {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		return a.certificate(r.TLS.PeerCertificates)
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, &AuthError{Missing: true, Reason: "no credential: send a client certificate the cluster's client CA signed, or a bearer token"}
	}
	scheme, token, ok := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return nil, &AuthError{Reason: "the Authorization header is not a bearer token"}
	}
	return a.token(ctx, token, clientAddress(r))
}

// clientAddress is the host part of the request's peer address (the
// whole of it when it has no port).
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// allowReview takes one of client's TokenReviews, or says how long until
// the next is allowed.
func (a *Authenticator) allowReview(client string, now time.Time) (bool, time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.limiters[client]
	if l == nil {
		if a.limiters == nil || len(a.limiters) >= reviewClients {
			a.limiters = map[string]*rate.Limiter{}
		}
		l = rate.NewLimiter(reviewRate, reviewBurst)
		a.limiters[client] = l
	}
	r := l.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// remember caches e under key in *m, emptying a full cache first.
func remember(m *map[[32]byte]tokenEntry, key [32]byte, e tokenEntry) {
	if *m == nil || len(*m) >= tokenCacheEntries {
		*m = map[[32]byte]tokenEntry{}
	}
	(*m)[key] = e
}

func (a *Authenticator) certificate(chain []*x509.Certificate) (*User, error) {
	pool := a.clientCA.Load()
	if pool == nil {
		return nil, &AuthError{Reason: "client certificate refused: the cluster's client CA (" + AuthenticationNamespace + "/" + AuthenticationConfigMap + ") is not known"}
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	leaf := chain[0]
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, &AuthError{Reason: "client certificate refused: " + err.Error()}
	}
	if leaf.Subject.CommonName == "" {
		return nil, &AuthError{Reason: "client certificate refused: it has no common name to take as the user"}
	}
	return &User{Name: leaf.Subject.CommonName, Groups: append(leaf.Subject.Organization, "system:authenticated"), Method: "x509"}, nil
}

func (a *Authenticator) token(ctx context.Context, token, client string) (*User, error) {
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	a.mu.Lock()
	if e, ok := a.tokens[key]; ok && now.Before(e.expires) {
		a.mu.Unlock()
		return e.user, nil
	}
	if e, ok := a.refused[key]; ok && now.Before(e.expires) {
		a.mu.Unlock()
		return nil, e.refusal
	}
	a.mu.Unlock()
	if ok, wait := a.allowReview(client, now); !ok {
		return nil, &ThrottledError{Client: client, RetryAfter: wait}
	}

	// A token meant for audio-api (a program's projected token) first;
	// else one meant for the API server itself, which is what a person's
	// kubeconfig holds and kubectl liken audio sends, as every aggregated
	// API server accepts. A token for any other audience is refused.
	tr, err := a.review(ctx, token, []string{a.Audience})
	if err == nil && !tr.Status.Authenticated {
		var own *authnv1.TokenReview
		if own, err = a.review(ctx, token, nil); err == nil && own.Status.Authenticated {
			tr = own
		}
	}
	if err != nil {
		return nil, fmt.Errorf("TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		reason := tr.Status.Error
		if reason == "" {
			reason = "the API server did not authenticate the token"
		}
		refusal := &AuthError{Reason: "token refused: " + reason}
		a.mu.Lock()
		remember(&a.refused, key, tokenEntry{refusal: refusal, expires: now.Add(refusalCacheMax)})
		a.mu.Unlock()
		return nil, refusal
	}
	u := &User{Name: tr.Status.User.Username, UID: tr.Status.User.UID, Groups: tr.Status.User.Groups, Method: "token"}
	if len(tr.Status.User.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range tr.Status.User.Extra {
			u.Extra[k] = v
		}
	}
	expires := now.Add(tokenCacheMax)
	if exp, ok := jwtexp.Expiry(token); ok && exp.Before(expires) {
		expires = exp
	}
	a.mu.Lock()
	remember(&a.tokens, key, tokenEntry{user: u, expires: expires})
	a.mu.Unlock()
	return u, nil
}

// review asks the API server about token for audiences (nil: its own).
func (a *Authenticator) review(ctx context.Context, token string, audiences []string) (*authnv1.TokenReview, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return a.Client.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{
		Spec: authnv1.TokenReviewSpec{Token: token, Audiences: audiences},
	}, metav1.CreateOptions{})
}

// Access is one question to the authorizer: may the user get
// resource[/subresource] named name in group audio.liken.sh.
type Access struct {
	Resource, Subresource, Name string
}

// String is "sinks/audio" or "sinks", the scope a 403 names.
func (a Access) String() string {
	if a.Subresource != "" {
		return a.Resource + "/" + a.Subresource
	}
	return a.Resource
}

// Authorize asks a SubjectAccessReview whether u may `get` acc; it
// returns the reason when refused (the authorizer's own, if it gave
// one), and an error when the API server could not answer.
func Authorize(ctx context.Context, client kubernetes.Interface, u *User, acc Access) (allowed bool, reason string, err error) {
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = v
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sar, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{
		Spec: authzv1.SubjectAccessReviewSpec{
			User: u.Name, UID: u.UID, Groups: u.Groups, Extra: extra,
			ResourceAttributes: &authzv1.ResourceAttributes{
				Verb: "get", Group: "audio.liken.sh", Resource: acc.Resource, Subresource: acc.Subresource, Name: acc.Name,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("SubjectAccessReview: %w", err)
	}
	if sar.Status.Allowed {
		return true, "", nil
	}
	reason = sar.Status.Reason
	if sar.Status.EvaluationError != "" {
		reason = strings.TrimSpace(reason + " " + sar.Status.EvaluationError)
	}
	return false, reason, nil
}

// errNoCredential is for errors.Is on an *AuthError with Missing set.
var errNoCredential = errors.New("no credential")

// Is makes errors.Is(err, errNoCredential) true for a missing credential.
func (e *AuthError) Is(target error) bool { return target == errNoCredential && e.Missing }
