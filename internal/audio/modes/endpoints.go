// SPDX-License-Identifier: Apache-2.0

package modes

// Why the WirePlumber sidecar's probes read the adapter's UUIDs, and why
// every state but one passes.
//
// WirePlumber's Bluetooth monitor registers media endpoints with
// bluetoothd (org.bluez.Media1 RegisterEndpoint/RegisterApplication; BlueZ
// doc org.bluez.Media(5)). bluetoothd publishes the A2DP service record,
// and with it the profile's UUID in the adapter's org.bluez.Adapter1
// UUIDs, from the first local endpoint of a role until the last one goes
// (BlueZ profiles/audio/a2dp.c), and unregisters a client's endpoints when
// that client leaves the bus. The profiles bluetoothd can host at all are
// org.bluez.Media1's SupportedUUIDs on the same adapter. So an adapter
// whose UUIDs hold none of its SupportedUUIDs is an adapter on which no
// one holds an endpoint: the state a WirePlumber is in after the media
// bus it used restarted, because it keeps its dead connection and never
// registers again. Restarting WirePlumber alone repairs exactly that:
// the new one opens the new bus and registers; PipeWire, and every card
// sink, keeps playing.
//
// Every other state passes, because restarting WirePlumber cannot change
// it: no DBUS_SYSTEM_BUS_ADDRESS (this pod has no Bluetooth), a bus that
// does not answer or has no bluetoothd on it (the Bluetooth pod's own
// restart, which its probes handle), no adapter, an adapter that hosts no
// media profile. An overlap on any adapter passes too: WirePlumber holds
// endpoints, and restarting it would cut the audio that works to retry one
// adapter. Each state is named in the probe's one line, which the kubelet
// keeps with the probe's result.
//
// Budget: 3 s for the connection (DefaultBusConnectTimeout) and the
// probe's deadline (DefaultProbeDeadline, 8 s) for everything, inside the
// probe's 10 s timeout; one GetManagedObjects call per run, which at the
// liveness period of 20 s is the whole cost.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/godbus/dbus/v5"
)

// D-Bus names read (BlueZ doc org.bluez.Adapter(5), org.bluez.Media(5)).
const (
	bluezService      = "org.bluez"
	adapterInterface  = "org.bluez.Adapter1"
	mediaInterface    = "org.bluez.Media1"
	getManagedObjects = "org.freedesktop.DBus.ObjectManager.GetManagedObjects"
)

// DefaultBusConnectTimeout bounds the connection to the media bus,
// authentication and Hello included.
const DefaultBusConnectTimeout = 3 * time.Second

// EndpointsRegistered is the mode `audio-operator endpoints-registered`,
// the wireplumber sidecar's startup and liveness probe. It reads
// org.bluez's objects on the bus named by DBUS_SYSTEM_BUS_ADDRESS and
// returns 1, with one line on Stderr, only when an adapter exists and no
// adapter advertises in its UUIDs any of the media profiles bluetoothd
// hosts on it (Media1.SupportedUUIDs, compared without case). Every other
// state returns 0 with one line on Stdout naming it: no bus variable, a
// bus that does not answer within DefaultBusConnectTimeout, no answer from
// org.bluez, no adapter, no hosted media profile, or the profiles
// advertised. It ends within Env.ProbeDeadline. Arguments are refused
// with status 2.
func EndpointsRegistered(ctx context.Context, args []string, env Env) int {
	e := env.resolved()
	if len(args) > 0 {
		fmt.Fprintf(e.Stderr, "endpoints-registered takes no arguments, got %q\n", args)
		return 2
	}
	address := e.getenv(EnvSystemBus)
	if address == "" {
		fmt.Fprintf(e.Stdout, "no media bus: %s is not set, so there are no endpoints to hold\n", EnvSystemBus)
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, e.ProbeDeadline)
	defer cancel()
	// The check runs aside so that the deadline holds even for a step
	// that takes no context (godbus dials without one).
	result := make(chan verdict, 1)
	go func() { result <- readEndpoints(ctx, address, min(DefaultBusConnectTimeout, e.ProbeDeadline)) }()
	var v verdict
	select {
	case v = <-result:
	case <-ctx.Done():
		v = verdict{line: fmt.Sprintf("media bus %s gave no answer within %v: nothing WirePlumber can repair", address, e.ProbeDeadline)}
	}
	if v.fail {
		fmt.Fprintln(e.Stderr, v.line)
		return 1
	}
	fmt.Fprintln(e.Stdout, v.line)
	return 0
}

// readEndpoints connects to the bus at address (within connectTimeout),
// reads org.bluez's objects and judges them.
func readEndpoints(ctx context.Context, address string, connectTimeout time.Duration) verdict {
	conn, err := connectBus(ctx, address, connectTimeout)
	if err != nil {
		return verdict{line: fmt.Sprintf("media bus %s does not answer (%v): nothing WirePlumber can repair", address, err)}
	}
	defer conn.Close()
	var objects map[dbus.ObjectPath]map[string]map[string]dbus.Variant
	err = conn.Object(bluezService, "/").CallWithContext(ctx, getManagedObjects, 0).Store(&objects)
	if err != nil {
		return verdict{line: fmt.Sprintf("bluetoothd does not answer on the media bus (%v): nothing WirePlumber can repair", err)}
	}
	return judgeAdapters(adaptersOf(objects))
}

// connectBus connects to address, authenticates and says Hello within
// timeout; the connection then lives until ctx ends or it is closed.
func connectBus(ctx context.Context, address string, timeout time.Duration) (*dbus.Conn, error) {
	connCtx, cancel := context.WithCancel(ctx)
	// godbus closes the connection when its context ends, which is what
	// unblocks an authentication or Hello a silent bus never answers.
	timer := time.AfterFunc(timeout, cancel)
	conn, err := dbus.Connect(address, dbus.WithContext(connCtx))
	if !timer.Stop() {
		if err == nil {
			conn.Close()
		}
		return nil, fmt.Errorf("no connection within %v", timeout)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return conn, nil
}

// adapter is what the probe reads of one org.bluez adapter object.
type adapter struct {
	path dbus.ObjectPath
	// uuids are Adapter1.UUIDs, the services the adapter advertises.
	uuids []string
	// hosted are Media1.SupportedUUIDs, the media profiles bluetoothd
	// can host on it; nil when the adapter has no Media1.
	hosted []string
}

// adaptersOf picks the adapters out of a GetManagedObjects reply, sorted by
// path. A property of another type than as (array of strings) reads as
// absent.
func adaptersOf(objects map[dbus.ObjectPath]map[string]map[string]dbus.Variant) []adapter {
	var out []adapter
	for path, ifaces := range objects {
		props, ok := ifaces[adapterInterface]
		if !ok {
			continue
		}
		a := adapter{path: path, uuids: stringsOf(props["UUIDs"])}
		if media, ok := ifaces[mediaInterface]; ok {
			a.hosted = stringsOf(media["SupportedUUIDs"])
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// stringsOf returns v's value when it is an array of strings, else nil.
func stringsOf(v dbus.Variant) []string {
	s, _ := v.Value().([]string)
	return s
}

// verdict is the probe's result: fail, and the one line that says why.
type verdict struct {
	fail bool
	line string
}

// judgeAdapters applies the rule of EndpointsRegistered to the adapters
// read.
func judgeAdapters(adapters []adapter) verdict {
	if len(adapters) == 0 {
		return verdict{line: "no adapter on the media bus: no endpoints to hold"}
	}
	var silent []string // adapters hosting profiles and advertising none
	hostedAny := 0
	for _, a := range adapters {
		hosted := lowerSet(a.hosted)
		if len(hosted) == 0 {
			continue
		}
		hostedAny++
		var advertised []string
		for _, u := range lowerSet(a.uuids) {
			if _, found := slices.BinarySearch(hosted, u); found {
				advertised = append(advertised, u)
			}
		}
		if len(advertised) > 0 {
			return verdict{line: fmt.Sprintf("adapter %s advertises %d of the %d media profiles bluetoothd hosts (%s): WirePlumber holds its endpoints",
				a.path, len(advertised), len(hosted), printable(advertised))}
		}
		silent = append(silent, fmt.Sprintf("%s (hosts %s)", a.path, printable(hosted)))
	}
	if hostedAny == 0 {
		return verdict{line: fmt.Sprintf("%d adapter(s), none hosting a media profile (no %s.SupportedUUIDs): no endpoints to hold", len(adapters), mediaInterface)}
	}
	return verdict{fail: true, line: fmt.Sprintf("no adapter advertises a media profile bluetoothd hosts: %s; WirePlumber holds no endpoint",
		strings.Join(silent, "; "))}
}

// printable joins UUIDs with ", ", quoting any that holds a character
// that is not graphic, so that the probe's report stays one line whatever
// the bus carried.
func printable(uuids []string) string {
	out := make([]string, len(uuids))
	for i, u := range uuids {
		out[i] = u
		if strings.IndexFunc(u, func(r rune) bool { return !unicode.IsGraphic(r) || r == ' ' }) >= 0 {
			out[i] = strconv.Quote(u)
		}
	}
	return strings.Join(out, ", ")
}

// lowerSet lowercases UUIDs, drops empty and repeated ones, and sorts
// them: D-Bus carries them as strings, and BlueZ writes them lowercase
// but compares them without case.
func lowerSet(uuids []string) []string {
	seen := make(map[string]bool, len(uuids))
	var out []string
	for _, u := range uuids {
		if u = strings.ToLower(strings.TrimSpace(u)); u != "" && !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	sort.Strings(out)
	return out
}
