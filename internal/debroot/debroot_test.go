// SPDX-License-Identifier: Apache-2.0

package debroot

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A file is found under the name dpkg recorded before the /usr merge.
func TestSpellings(t *testing.T) {
	links := map[string]string{"lib": "usr/lib", "bin": "usr/bin", "lib64": "usr/lib64"}
	got := spellings("/usr/lib/x86_64-linux-gnu/libc.so.6", links)
	want := []string{"/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("spellings (-want +got):\n%s", diff)
	}
	if got := spellings("/usr/share/x", links); len(got) != 1 {
		t.Fatalf("a path under no link: %v", got)
	}
}

func TestParseSearch(t *testing.T) {
	out := "diversion by dash from: /bin/sh\ndiversion by dash to: /bin/sh.distrib\n" +
		"libc6:amd64: /lib/x86_64-linux-gnu/libc.so.6\ndash: /bin/sh\nlibc6:amd64, libc6:i386: /usr/share/doc/libc6\n"
	got, err := parseSearch([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/lib/x86_64-linux-gnu/libc.so.6": "libc6:amd64", "/bin/sh": "dash", "/usr/share/doc/libc6": "libc6:amd64"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("parseSearch (-want +got):\n%s", diff)
	}
	if _, err := parseSearch([]byte("no colon here\n")); err == nil {
		t.Fatal("a line without a colon: no error")
	}
}

// This machine's dpkg database names the owner of its C library by the
// merged path, with the version dpkg-query reports, and refuses a file
// no package installed, naming it.
func TestOwnersAndVersionsOfThisMachine(t *testing.T) {
	ctx := context.Background()
	libc, err := filepath.EvalSymlinks("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		t.Fatal(err)
	}
	owners, err := owningPackages(ctx, "/", []string{libc, "/usr/bin/dbus-daemon"})
	if err != nil {
		t.Fatal(err)
	}
	if owners[libc] != "libc6:amd64" || owners["/usr/bin/dbus-daemon"] == "" {
		t.Fatalf("owners %v", owners)
	}
	pkgs, err := installed(ctx, owners)
	if err != nil {
		t.Fatal(err)
	}
	version, err := exec.Command("dpkg-query", "--show", "--showformat", "${Version}", "libc6:amd64").Output()
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 2 || pkgs[1].Name != "libc6" || pkgs[1].Arch != "amd64" || pkgs[1].Version != string(version) {
		t.Fatalf("packages %+v, want dbus's and libc6 amd64 %s", pkgs, version)
	}
	stray := filepath.Join(t.TempDir(), "stray")
	_, err = owningPackages(ctx, "/", []string{libc, stray})
	if err == nil || !strings.Contains(err.Error(), "no installed package owns "+stray) {
		t.Fatalf("a file no package owns: %v", err)
	}
}

// The key changes with any version, and the file apt-get download writes
// quotes an epoch.
func TestKeyAndDebName(t *testing.T) {
	a := []Package{{"libc6", "amd64", "2.36-9"}, {"pci.ids", "all", "0.0~2023"}}
	b := []Package{{"libc6", "amd64", "2.36-9+deb12u1"}, {"pci.ids", "all", "0.0~2023"}}
	if key("arm64", a) == key("arm64", b) || key("arm64", a) != key("arm64", a) || key("arm64", a) == key("armhf", a) { //nolint:staticcheck // the same list twice must give the same key
		t.Fatal("the key does not follow the package list")
	}
	ap := apt{arch: "arm64"}
	if got := ap.debName(Package{"libfoo", "amd64", "1:2.0-1"}); got != "libfoo_1%3a2.0-1_arm64.deb" {
		t.Fatalf("debName %s", got)
	}
	if got := ap.debName(Package{"pci.ids", "all", "0.1"}); got != "pci.ids_0.1_all.deb" {
		t.Fatalf("debName %s", got)
	}
}

// A package that names /lib lands under usr/lib in a root laid out as
// a merged-/usr machine's, and the link stays a link.
func TestUnpackKeepsTheRootsLinks(t *testing.T) {
	src := t.TempDir()
	for _, d := range []string{"DEBIAN", "lib/x86_64-linux-gnu", "usr/share/doc/t"} {
		if err := os.MkdirAll(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	control := "Package: t\nVersion: 1\nArchitecture: all\nMaintainer: t <t@example.com>\nDescription: t\n"
	for name, content := range map[string]string{"DEBIAN/control": control, "lib/x86_64-linux-gnu/libt.so.1": "lib", "usr/share/doc/t/README": "doc"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	deb := filepath.Join(t.TempDir(), "t.deb")
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "--build", src, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb --build: %v\n%s", err, out)
	}
	root := t.TempDir()
	if err := mirrorRootLinks("/", root); err != nil {
		t.Fatal(err)
	}
	if err := unpack(context.Background(), deb, root); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(root, "lib")); err != nil || target != "usr/lib" {
		t.Fatalf("lib: %q, %v; want the link to usr/lib", target, err)
	}
	if data, err := os.ReadFile(filepath.Join(root, "usr/lib/x86_64-linux-gnu/libt.so.1")); err != nil || string(data) != "lib" {
		t.Fatalf("usr/lib/x86_64-linux-gnu/libt.so.1: %q, %v", data, err)
	}
}

// The installed version wins; else the same source's build for the
// other architecture; else the oldest newer one; never an older one.
func TestPick(t *testing.T) {
	for _, tc := range []struct {
		installed string
		avail     []string
		want      string
	}{
		{"1.4.2-1~bpo12+1", []string{"1.4.2-1~bpo12+1", "0.3.65-3+deb12u1"}, "1.4.2-1~bpo12+1"},
		{"1:2.66-4+deb12u2+b2", []string{"1:2.66-4+deb12u2+b1", "1:2.66-4+deb12u3+b1"}, "1:2.66-4+deb12u2+b1"},
		{"2.5.0-1+deb12u1", []string{"2.5.0-1+deb12u5", "2.5.0-1+deb12u2"}, "2.5.0-1+deb12u2"},
		{"2.5.0-1+deb12u3", []string{"2.5.0-1+deb12u2"}, ""},
	} {
		got, err := pick(tc.installed, tc.avail)
		if err != nil || got != tc.want {
			t.Errorf("pick(%s, %v) = %q, %v; want %q", tc.installed, tc.avail, got, err, tc.want)
		}
	}
}
