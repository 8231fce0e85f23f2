// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/liken-sh/operators/internal/captureapi"
)

// countTokenReviews makes every TokenReview sent through rc's clients
// count in the returned counter.
func countTokenReviews(rc *rest.Config) *atomic.Int64 {
	n := &atomic.Int64{}
	rc.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/tokenreviews") {
				n.Add(1)
			}
			return next.RoundTrip(r)
		})
	})
	return n
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// checkForgedTokens: one forged token sent again and again costs the API
// server one pair of TokenReviews (the refusal is cached), and a stream
// of ever new forged tokens from one client address is answered 429 with
// a Retry-After once that address has used its burst of reviews, each
// refusal costing the API server nothing, while a token already accepted
// keeps working from the same address.
func checkForgedTokens(t *testing.T, ctx context.Context, https *http.Client, tap, accepted string, reviews *atomic.Int64) {
	// The accepted token is in the cache from earlier subtests; this
	// makes sure.
	get(t, ctx, https, tap, accepted).Body.Close()

	before := reviews.Load()
	for range 20 {
		problemOf(t, get(t, ctx, https, tap, "forged-again-and-again"), http.StatusUnauthorized)
	}
	if n := reviews.Load() - before; n < 1 || n > 2 {
		t.Errorf("one forged token sent 20 times cost %d TokenReviews, want 1 or 2 (the refusal cached)", n)
	}

	before = reviews.Load()
	throttled, refused := 0, 0
	for i := range 60 {
		resp := get(t, ctx, https, tap, fmt.Sprintf("forged-%d", i))
		switch resp.StatusCode {
		case http.StatusTooManyRequests:
			throttled++
			retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			p := problemOf(t, resp, http.StatusTooManyRequests)
			if err != nil || retry < 1 || p["type"] != captureapi.ProblemTooManyRequests.URI {
				t.Errorf("429: Retry-After %q, problem %v", resp.Header.Get("Retry-After"), p)
			}
		default:
			refused++
			problemOf(t, resp, http.StatusUnauthorized)
		}
	}
	n := reviews.Load() - before
	t.Logf("60 new forged tokens from one address: %d refused after a review, %d answered 429; %d TokenReviews", refused, throttled, n)
	if throttled == 0 {
		t.Error("60 new forged tokens from one address were never answered 429")
	}
	// Each review the limiter allows is at most two TokenReviews.
	if n > int64(2*refused) {
		t.Errorf("%d TokenReviews for %d reviewed tokens", n, refused)
	}

	resp := get(t, ctx, https, tap, accepted)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("an accepted token from the throttled address: %d, want 200 (it is cached)", resp.StatusCode)
	}
}
