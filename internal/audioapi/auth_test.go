// SPDX-License-Identifier: Apache-2.0

package audioapi

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestJWTExpiry(t *testing.T) {
	enc := base64.RawURLEncoding.EncodeToString
	for _, tc := range []struct {
		token string
		want  int64
		ok    bool
	}{
		{"h." + enc([]byte(`{"exp":1700000000}`)) + ".s", 1700000000, true},
		{"h." + enc([]byte(`{"sub":"x"}`)) + ".s", 0, false},
		{"h." + enc([]byte(`not json`)) + ".s", 0, false},
		{"opaque-token", 0, false},
		{"h.!!!.s", 0, false},
	} {
		got, ok := jwtExpiry(tc.token)
		if ok != tc.ok || (ok && got.Unix() != tc.want) {
			t.Errorf("jwtExpiry(%q) = %v, %v", tc.token, got, ok)
		}
	}
}

// A token is untrusted input read before any check: whatever it holds,
// jwtExpiry does not panic, and it reports an expiry only for a token of
// three parts whose payload names a non-zero exp.
func FuzzJWTExpiry(f *testing.F) {
	f.Add("eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjE3MDAwMDAwMDB9.c2ln")
	f.Add("a.b.c")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		if exp, ok := jwtExpiry(token); ok && (exp.Unix() == 0 || strings.Count(token, ".") != 2) {
			t.Fatalf("jwtExpiry(%q) = %v", token, exp)
		}
	})
}
