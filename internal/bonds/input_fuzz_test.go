// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"encoding/json"
	"testing"
)

// FuzzParseInput: whatever a Secret's .input key holds, ParseInput
// refuses it or returns capabilities that validate and encode back to a
// list ParseInput takes again.
func FuzzParseInput(f *testing.F) {
	f.Add(padInput)
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"name":"x","abs":[{"code":1,"value":0,"min":1,"max":0}]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		caps, err := ParseInput(data)
		if err != nil {
			return
		}
		for _, c := range caps {
			if err := c.Validate(); err != nil {
				t.Fatalf("accepted a device that does not validate: %v", err)
			}
		}
		again, err := json.Marshal(caps)
		if err != nil {
			t.Fatal(err)
		}
		if len(caps) > 0 {
			if _, err := ParseInput(again); err != nil {
				t.Fatalf("a parsed list does not parse again: %v", err)
			}
		}
	})
}
