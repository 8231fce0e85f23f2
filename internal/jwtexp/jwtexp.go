// SPDX-License-Identifier: Apache-2.0

// Package jwtexp reads the expiry of a JSON Web Token without verifying
// it, for callers whose token the API server has just accepted through a
// TokenReview and who only need to know how long they may take it
// without asking again. The module has no JWT library, and one would
// bring claim types, algorithms and verification for the one number read
// here.
package jwtexp

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"
	"time"
)

// Expiry returns the "exp" claim (RFC 7519 section 4.1.4, a NumericDate:
// seconds since the Unix epoch, possibly with a fraction, which is
// dropped) of token, a JWS in compact serialization (RFC 7515 section
// 7.1: three base64url parts separated by dots). Nothing is verified:
// the result may only ever shorten how long an already accepted token is
// kept. ok is false for a token that is not three parts, whose payload is
// not base64url (unpadded) JSON, or whose exp is absent, not a number, or
// not after the epoch and within time.Time's Unix range (a year before
// 292277026596).
func Expiry(token string) (exp time.Time, ok bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *float64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	// A float64 holds every integer up to 2^53 exactly, far past any
	// date a token carries; the bound keeps the conversion to int64
	// defined (the Go spec leaves an out-of-range one to the machine).
	sec := math.Floor(*claims.Exp)
	if !(sec > 0 && sec < 1<<62) {
		return time.Time{}, false
	}
	return time.Unix(int64(sec), 0), true
}
