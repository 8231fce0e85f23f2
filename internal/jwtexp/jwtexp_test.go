// SPDX-License-Identifier: Apache-2.0

package jwtexp

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestExpiry(t *testing.T) {
	enc := base64.RawURLEncoding.EncodeToString
	for _, tc := range []struct {
		token string
		want  int64
		ok    bool
	}{
		{"h." + enc([]byte(`{"exp":1700000000}`)) + ".s", 1700000000, true},
		// A NumericDate may carry a fraction (RFC 7519 section 2).
		{"h." + enc([]byte(`{"exp":1700000000.75}`)) + ".s", 1700000000, true},
		{"h." + enc([]byte(`{"exp":1.7e9}`)) + ".s", 1700000000, true},
		{"h." + enc([]byte(`{"sub":"x"}`)) + ".s", 0, false},
		{"h." + enc([]byte(`{"exp":"1700000000"}`)) + ".s", 0, false},
		{"h." + enc([]byte(`{"exp":0}`)) + ".s", 0, false},
		{"h." + enc([]byte(`{"exp":-5}`)) + ".s", 0, false},
		{"h." + enc([]byte(`{"exp":1e300}`)) + ".s", 0, false},
		{"h." + enc([]byte(`not json`)) + ".s", 0, false},
		{"opaque-token", 0, false},
		{"h.!!!.s", 0, false},
		{"a.b.c.d", 0, false},
	} {
		got, ok := Expiry(tc.token)
		if ok != tc.ok || (ok && got.Unix() != tc.want) {
			t.Errorf("Expiry(%q) = %v, %v; want %d, %v", tc.token, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzTokenExpiry: a bearer token is the caller's, read before the API
// server has judged it. Whatever it holds, Expiry does not panic, and it
// reads an expiry only from a token of three dot-separated parts, and
// only one after the epoch.
func FuzzTokenExpiry(f *testing.F) {
	f.Add("eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjE3MDAwMDAwMDB9.c2ln")
	f.Add("eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjFlMzAwfQ.c2ln") // exp 1e300
	f.Add("a.b.c")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		if exp, ok := Expiry(token); ok && (exp.Unix() <= 0 || strings.Count(token, ".") != 2) {
			t.Fatalf("Expiry(%q) = %v", token, exp)
		}
	})
}
