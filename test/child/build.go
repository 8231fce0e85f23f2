// SPDX-License-Identifier: Apache-2.0

package child

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"testing"
)

// BuildCommand builds the command in package pkg into a new temporary
// directory of tb and returns the binary's path; see BuildCommandInto.
func BuildCommand(tb testing.TB, pkg string) string {
	tb.Helper()
	return BuildCommandInto(tb, tb.TempDir(), pkg)
}

// BuildCommandInto builds the command in package pkg the way
// hack/build-images.sh builds the images' binaries (static: CGO_ENABLED=0,
// -trimpath, stripped with -ldflags=-s -w), writes it into dir named
// after the package's last path element, and returns its path. pkg is an
// import path ("github.com/liken-sh/operators/cmd/audio-operator") or a
// directory relative to the test's own ("." or "../audio-capture"). A
// failed build fails tb with the compiler's output.
func BuildCommandInto(tb testing.TB, dir, pkg string) string {
	tb.Helper()
	name := path.Base(pkg)
	if name == "." || name == ".." {
		wd, err := os.Getwd()
		if err != nil {
			tb.Fatal(err)
		}
		name = filepath.Base(filepath.Join(wd, pkg))
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = "/usr/local/go/bin/go" // hack/env.sh installs Go there
	}
	bin := filepath.Join(dir, name)
	build := exec.Command(goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", bin, pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return bin
}
