package alsa

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// buildTree lays out under root what a testdata/sysfs/*.tree manifest
// says: "dir P", "file P CONTENT" (the rest of the line, or a Go-quoted
// string; a newline is added) and "link P TARGET" (a TARGET starting with
// / is taken from root and written relative, as sysfs writes its links).
func buildTree(t testing.TB, root, manifest string) {
	t.Helper()
	f, err := os.Open(manifest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, " ", 3)
		if len(fields) < 2 || !filepath.IsLocal(fields[1]) {
			t.Fatalf("%s:%d: %q", manifest, n, line)
		}
		path := filepath.Join(root, fields[1])
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case fields[0] == "dir":
			err = os.MkdirAll(path, 0o755)
		case fields[0] == "file" && len(fields) == 3:
			content := fields[2]
			if strings.HasPrefix(content, `"`) {
				if content, err = strconv.Unquote(content); err != nil {
					t.Fatalf("%s:%d: %v", manifest, n, err)
				}
			}
			err = os.WriteFile(path, []byte(content+"\n"), 0o644)
		case fields[0] == "link" && len(fields) == 3:
			target := fields[2]
			if abs, ok := strings.CutPrefix(target, "/"); ok {
				target, err = filepath.Rel(filepath.Dir(path), filepath.Join(root, abs))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Join(root, abs), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			err = os.Symlink(target, path)
		default:
			t.Fatalf("%s:%d: %q", manifest, n, line)
		}
		if err != nil {
			t.Fatalf("%s:%d: %v", manifest, n, err)
		}
	}
}

var grepDumpLine = regexp.MustCompile(`^/sys/(\S*?):(?: (.*))?$`)

// loadGrepDump writes the files of a "PATH: VALUE" dump (the uevent
// fixture's form) under root; a line without the /sys/ prefix continues
// the file above.
func loadGrepDump(t testing.TB, root, dump string) {
	t.Helper()
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]string{}
	var order []string
	last := ""
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if m := grepDumpLine.FindStringSubmatch(line); m != nil {
			last = m[1]
			order = append(order, last)
			files[last] = nil
			if m[2] != "" {
				files[last] = []string{m[2]}
			}
			continue
		}
		if last == "" {
			t.Fatalf("%s: %q before any path", dump, line)
		}
		files[last] = append(files[last], line)
	}
	for _, p := range order {
		path := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		content := strings.Join(files[p], "\n")
		if content != "" {
			content += "\n"
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func xpsSysfs(t testing.TB) string {
	root := t.TempDir()
	buildTree(t, root, "testdata/sysfs/xps9700.tree")
	return root
}

func TestReadCardIdentity(t *testing.T) {
	xps := xpsSysfs(t)
	aloop := t.TempDir()
	loadGrepDump(t, aloop, "testdata/sysfs/sysfs-grep-dump-snd_aloop-and-lis3lv02d-excerpt.txt")
	buildTree(t, aloop, "testdata/sysfs/aloop-links.tree")
	hda := t.TempDir()
	buildTree(t, hda, "testdata/sysfs/hda-pci.tree")

	for _, tc := range []struct {
		name  string
		sysfs string
		card  int
		want  CardIdentity
	}{
		{"SOF machine device below its PCI controller", xps, 0, CardIdentity{Card: 0, ID: "sofsoundwire",
			Bus: "pci", Location: "0000:00:1f.3", DeviceBus: "platform", Driver: "sof_sdw"}},
		{"USB headset", xps, 1, CardIdentity{Card: 1, ID: "USB", Bus: "usb", Location: "3-1.1", DeviceBus: "usb",
			Driver: "snd-usb-audio", USBVendor: "1532", USBProduct: "0526", USBSerial: "00000000",
			USBManufacturer: "Razer", USBProductName: "Razer Kraken X USB"}},
		{"USB dock behind two hubs", xps, 2, CardIdentity{Card: 2, ID: "Dock", Bus: "usb", Location: "3-2.3.4", DeviceBus: "usb",
			Driver: "snd-usb-audio", USBVendor: "0bda", USBProduct: "402e", USBSerial: "200901010001",
			USBManufacturer: "Generic", USBProductName: "USB Audio"}},
		{"snd-aloop (recorded files)", aloop, 2, CardIdentity{Card: 2, ID: "Loopback", Bus: "platform",
			Location: "snd_aloop.0", DeviceBus: "platform", Driver: "snd_aloop"}},
		{"HDA on the PCI function", hda, 0, CardIdentity{Card: 0, ID: "PCH", Bus: "pci", Location: "0000:00:1f.3",
			DeviceBus: "pci", Driver: "snd_hda_intel"}},
		{"no device link", hda, 9, CardIdentity{Card: 9, ID: "Virtual"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadCardIdentity(tc.sysfs, tc.card)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want.Bus != "" && !strings.HasPrefix(got.DevicePath, tc.sysfs) {
				t.Errorf("DevicePath %q is not under the tree", got.DevicePath)
			}
			got.DevicePath = ""
			if got != tc.want {
				t.Errorf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if _, err := ReadCardIdentity(xps, 5); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing card: %v; want ErrNotExist", err)
	}
}
