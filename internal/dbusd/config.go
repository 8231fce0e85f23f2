// SPDX-License-Identifier: Apache-2.0

package dbusd

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"os/user"
)

// SystemConfig is the distribution's system bus configuration that
// PolicySystem runs unmodified. On Debian it holds the default-deny policy
// and includes /usr/share/dbus-1/system.d and /etc/dbus-1/system.d, where
// the bluez package installs BlueZ's bluetooth.conf.
const SystemConfig = "/usr/share/dbus-1/system.conf"

// Policy selects the security policy of the bus.
type Policy int

const (
	// PolicySystem runs SystemConfig: everything is denied except what
	// the service policies in system.d allow, so root may own org.bluez
	// and anyone may send to it (BlueZ's bluetooth.conf) but no one may
	// own an arbitrary name. Owning org.bluez under it takes root.
	PolicySystem Policy = iota
	// PolicyOpen allows every user to connect, own any name, send
	// anything and eavesdrop. For tests that must not depend on the
	// policy files installed, or that run unprivileged.
	PolicyOpen
)

// String returns "system" or "open".
func (p Policy) String() string {
	switch p {
	case PolicySystem:
		return "system"
	case PolicyOpen:
		return "open"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// configFor returns the bus configuration to write for opts, or nil when
// the daemon's own --system configuration is used as it is.
func configFor(opts Options) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"` + "\n")
	b.WriteString(` "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">` + "\n")
	b.WriteString("<busconfig>\n")
	switch opts.Policy {
	case PolicySystem:
		if !opts.KeepUser {
			return nil, nil
		}
		// The included file sets <user>messagebus</user>; a later
		// <user> overrides it, keeping the policy and dropping only the
		// change of user.
		fmt.Fprintf(&b, "  <include>%s</include>\n", escapeXML(SystemConfig))
		name, err := currentUser()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "  <user>%s</user>\n", escapeXML(name))
	case PolicyOpen:
		b.WriteString("  <type>system</type>\n")
		b.WriteString("  <auth>EXTERNAL</auth>\n")
		fmt.Fprintf(&b, "  <listen>%s</listen>\n", escapeXML(Address(opts.SocketPath)))
		b.WriteString("  <policy context=\"default\">\n")
		b.WriteString("    <allow user=\"*\"/>\n")
		b.WriteString("    <allow own=\"*\"/>\n")
		b.WriteString("    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n")
		b.WriteString("    <allow eavesdrop=\"true\"/>\n")
		b.WriteString("  </policy>\n")
	default:
		return nil, fmt.Errorf("dbusd: unknown policy %v", opts.Policy)
	}
	b.WriteString("</busconfig>\n")
	return b.Bytes(), nil
}

// currentUser names the calling user for <user>; dbus-daemon resolves the
// name through the user database, so a uid without a name cannot be kept.
func currentUser() (string, error) {
	u, err := user.Current()
	if err != nil {
		return "", fmt.Errorf("dbusd: keeping the calling user needs its name for <user>: %w", err)
	}
	return u.Username, nil
}

// escapeXML escapes s for XML character data.
func escapeXML(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// writeConfig writes a generated configuration beside the socket, where
// the caller already may write, and returns its path.
func writeConfig(dir string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, ".dbus-daemon-*.conf")
	if err != nil {
		return "", fmt.Errorf("dbusd: write bus configuration: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("dbusd: write bus configuration: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("dbusd: write bus configuration: %w", err)
	}
	return f.Name(), nil
}
