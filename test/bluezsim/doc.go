// SPDX-License-Identifier: Apache-2.0

// Package bluezsim runs a simulated bluetoothd for tests: python-dbusmock's
// BlueZ template, extended in bluez_liken.py, owning org.bluez on a real
// private dbus-daemon that enforces the distribution's system bus policy
// with BlueZ's bluetooth.conf, exactly the bus the bluetoothd container
// serves. A client of BlueZ's documented D-Bus API (ObjectManager, Adapter1,
// Device1, Input1, AgentManager1, Media1, PropertiesChanged) talks to it as
// it would to bluetoothd; when a device pairs, the simulator writes BlueZ's
// storage tree (<storage>/<ADAPTER>/<DEVICE>/info and
// <storage>/<ADAPTER>/cache/<DEVICE>, directories 0700, files 0600) with a
// newly generated key, and when the BlueZ side restarts it loads the
// bonds back from that tree, as bluetoothd does.
//
// The test drives the radio's side through Sim's methods (adapters and
// devices appearing, pairing, links coming and going); the code under test
// sees only org.bluez. Stop and StopBlueZ make org.bluez leave the bus, as
// bluetoothd exiting does; RestartBus restarts dbus-daemon too, as a
// restart of the bluetoothd container does, recreating the socket at the
// same path. SetSwitchedOn switches a device off and on: switched off, it
// answers no page, so Device1.Connect fails with bluetoothd's page-timeout
// error after Options.PageTimeout; switched on, it waits to be paged, as
// a speaker does. ConnectCalls lists the Device1.Connect calls clients
// made, with when each arrived and how it ended.
//
// Speakers. AddSpeaker adds a paired A2DP sink offering the codecs given
// (SBC, aptX, aptX HD, LDAC). A sound server registers its A2DP source
// endpoints on an adapter's org.bluez.Media1 (RegisterEndpoint or
// RegisterApplication, as PipeWire's bluez5 plugin does); when the
// speaker connects the simulator exports its stream endpoints
// (org.bluez.MediaEndpoint1 at <device>/sep<N>) and configures a stream as
// bluetoothd does: SelectConfiguration on the first registered endpoint
// whose codec the speaker offers, then SetConfiguration with a new
// org.bluez.MediaTransport1 at <device>/sep<N>/fd<M> carrying Device,
// UUID, Codec, Configuration, State, Endpoint and, where the speaker has
// them, Volume (AVRCP absolute volume) and Delay. Acquire and TryAcquire
// pass one end of a SOCK_SEQPACKET socket pair (an L2CAP socket's type)
// and the simulator counts what arrives at the other end; Release and the
// owner leaving the bus end it. SetConfiguration on a speaker's endpoint
// switches codecs: the old transport is cleared (ClearConfiguration) and a
// new one configured. Endpoints, Transports, WaitEndpoints and
// WaitTransport read what the simulated bluetoothd holds; ParseConfiguration
// decodes a transport's codec configuration.
//
// Running it takes /usr/bin/python3 with Debian's python3-dbusmock (the
// python3 on PATH may be another interpreter without it), dbus-daemon, and,
// under the default system policy, root: BlueZ's policy lets only root own
// org.bluez.
package bluezsim
