// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/test/fakesys"
)

// tree lays out the manifests (fakesys format) under one new root.
func tree(t testing.TB, manifests ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, m := range manifests {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := fakesys.BuildTree(data, root); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
	}
	return root
}

// grepDump writes the files of a "PATH: VALUE" dump (the uevent fixture's
// shape) under root.
func grepDump(t testing.TB, root, dump string) {
	t.Helper()
	if err := fakesys.LoadGrepDumpFile(dump, root); err != nil {
		t.Fatal(err)
	}
}

// attrs renders a device's attributes as name=value strings, for diffs.
func attrs(d dra.Device) map[string]string {
	out := map[string]string{}
	for k, v := range d.Attributes {
		switch {
		case v.StringValue != nil:
			out[string(k)] = *v.StringValue
		case v.BoolValue != nil:
			if *v.BoolValue {
				out[string(k)] = "true"
			} else {
				out[string(k)] = "false"
			}
		}
	}
	return out
}

func names(s Scan) []string {
	var out []string
	for _, f := range s.Devices {
		out = append(out, f.Device.Name)
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

func sortNodes(n []Node) {
	slices.SortFunc(n, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
}
