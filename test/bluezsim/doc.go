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
// bluetoothd exiting does.
//
// Running it takes /usr/bin/python3 with Debian's python3-dbusmock (the
// python3 on PATH may be another interpreter without it), dbus-daemon, and,
// under the default system policy, root: BlueZ's policy lets only root own
// org.bluez.
package bluezsim
