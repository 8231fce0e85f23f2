// SPDX-License-Identifier: Apache-2.0

package imageset

import (
	"io/fs"

	"github.com/liken-sh/operators/internal/ocibuild"
)

// The accounts every image knows. dbus-daemon drops from root to
// messagebus at start and fails when the name does not resolve; BlueZ's
// bus policy names the bluetooth group. The numbers are Debian's usual
// ones for system accounts; nothing in the images owns a file by them.
const (
	passwd = `root:x:0:0:root:/root:/usr/sbin/nologin
messagebus:x:100:101::/nonexistent:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
`
	group = `root:x:0:
messagebus:x:101:
bluetooth:x:102:
nogroup:x:65534:
`
	// nsswitch makes the C library's account lookups read the files
	// above, with no module to load, whatever its compiled-in default.
	nsswitch = `passwd: files
group: files
shadow: files
hosts: files dns
`
)

// base is what every image has besides its own contents: the account
// files, the directories a container runtime (and bubblewrap, in the
// tests) mounts over, scratch space, and /var/run as Debian has it, a
// link to /run, relative so that it resolves inside the image wherever
// the image is unpacked.
func base() ocibuild.Spec {
	return ocibuild.Spec{
		Files: []ocibuild.File{
			{Path: "/etc/passwd", Content: []byte(passwd), Mode: 0o644},
			{Path: "/etc/group", Content: []byte(group), Mode: 0o644},
			{Path: "/etc/nsswitch.conf", Content: []byte(nsswitch), Mode: 0o644},
		},
		Dirs: []ocibuild.Dir{
			{Path: "/dev", Mode: 0o755},
			{Path: "/proc", Mode: 0o555},
			{Path: "/sys", Mode: 0o555},
			{Path: "/root", Mode: 0o700},
			{Path: "/run", Mode: 0o755},
			{Path: "/tmp", Mode: fs.ModeSticky | 0o777},
			{Path: "/var/lib", Mode: 0o755},
		},
		Symlinks: []ocibuild.Symlink{{Path: "/var/run", Target: "../run"}},
		Env:      []string{searchPath},
	}
}

// with returns base extended by s: s's lists after base's, s's
// entrypoint and labels.
func with(s ocibuild.Spec) ocibuild.Spec {
	b := base()
	s.Files = append(b.Files, s.Files...)
	s.Dirs = append(b.Dirs, s.Dirs...)
	s.Symlinks = append(b.Symlinks, s.Symlinks...)
	s.Env = append(b.Env, s.Env...)
	return s
}

// mountPoints are directories a pod mounts volumes at, mode 0755.
func mountPoints(paths ...string) []ocibuild.Dir {
	dirs := make([]ocibuild.Dir, len(paths))
	for i, p := range paths {
		dirs[i] = ocibuild.Dir{Path: p, Mode: 0o755}
	}
	return dirs
}
