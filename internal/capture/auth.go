// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"

	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/internal/jwtexp"
)

// Reviewer answers whether a bearer token is the caller's: ok, or a
// problem (401 for a token the API server does not accept, 403 for
// another user's, 503 when the API server cannot be asked).
type Reviewer interface {
	Review(ctx context.Context, token string) *captureapi.Problem
}

// maxCacheAge bounds how long a positive review is kept.
const maxCacheAge = 60 * time.Second

// maxCacheEntries bounds the cache: audio-api holds one token at a time
// and rotates it every few minutes.
const maxCacheEntries = 16

// TokenReviewer checks tokens with the API server's TokenReview
// (authentication.k8s.io/v1) for Audience, accepting only user. A positive
// answer is kept, keyed by the token's SHA-256, until the token expires or
// for 60 s, whichever is sooner; refusals are never kept, so a token
// granted later is accepted at once.
type TokenReviewer struct {
	client *rest.RESTClient
	user   string
	now    func() time.Time

	mu    sync.Mutex
	cache map[[sha256.Size]byte]time.Time
}

// NewTokenReviewer returns a TokenReviewer that reaches the API server
// with rc and accepts user. Its client knows the authentication.k8s.io/v1
// types alone: the clientset's scheme registers every API group and would
// cost the container several MiB at start. Errors: rc cannot make a
// client.
func NewTokenReviewer(rc *rest.Config, user string) (*TokenReviewer, error) {
	scheme := runtime.NewScheme()
	if err := authv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(rc)
	cfg.GroupVersion = &authv1.SchemeGroupVersion
	cfg.APIPath = "/apis"
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	client, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("TokenReview client: %w", err)
	}
	return &TokenReviewer{client: client, user: user, now: time.Now, cache: map[[sha256.Size]byte]time.Time{}}, nil
}

// Review implements Reviewer.
func (r *TokenReviewer) Review(ctx context.Context, token string) *captureapi.Problem {
	key := sha256.Sum256([]byte(token))
	now := r.now()
	r.mu.Lock()
	until, hit := r.cache[key]
	r.mu.Unlock()
	if hit && now.Before(until) {
		return nil
	}
	review := &authv1.TokenReview{Spec: authv1.TokenReviewSpec{Token: token, Audiences: []string{Audience}}}
	out := &authv1.TokenReview{}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.client.Post().Resource("tokenreviews").Body(review).Do(ctx).Into(out); err != nil {
		return captureapi.NewProblem(captureapi.ProblemUnavailable, "The API server did not review the token: %v", err)
	}
	st := out.Status
	switch {
	case !st.Authenticated:
		why := st.Error
		if why == "" {
			why = "not authenticated"
		}
		return captureapi.NewProblem(captureapi.ProblemUnauthenticated, "The token was refused: %s.", why)
	case !slices.Contains(st.Audiences, Audience):
		return captureapi.NewProblem(captureapi.ProblemUnauthenticated, "The token is not for the audience %q (it is for %q).", Audience, st.Audiences)
	case st.User.Username != r.user:
		return captureapi.NewProblem(captureapi.ProblemForbidden, "%s may not call the capture container; only %s may.", st.User.Username, r.user)
	}
	until = now.Add(maxCacheAge)
	if exp, ok := jwtexp.Expiry(token); ok && exp.Before(until) {
		until = exp
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cache) >= maxCacheEntries {
		for k, u := range r.cache {
			if !now.Before(u) || len(r.cache) >= maxCacheEntries {
				delete(r.cache, k)
			}
		}
	}
	r.cache[key] = until
	return nil
}
