// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"os"
	"testing"

	"github.com/liken-sh/operators/internal/alsa/eld"
)

// BenchmarkReadCardXPS: one ReadCard of the recorded sof-soundwire card
// (27 elements, 7 PCMs, 3 ELDs), the read declare and a reconcile pass do
// per card.
func BenchmarkReadCardXPS(b *testing.B) {
	c := xpsCard(b, 0).Open()
	defer c.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadCard(c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseELD(b *testing.B) {
	block, err := os.ReadFile("../../testdata/fixtures/eld/samsung-u28e590-dp-eld-ctl.bin")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		e, err := eld.Parse(block)
		if err != nil || e.MonitorID() == "" {
			b.Fatal(err)
		}
	}
}
