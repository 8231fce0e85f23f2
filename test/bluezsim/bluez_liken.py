# SPDX-License-Identifier: Apache-2.0
'''BlueZ simulator: a python-dbusmock template built on dbusmock's bluez5.

It loads the bluez5 template (the org.bluez name, the ObjectManager at /,
and /org/bluez with AgentManager1 and ProfileManager1) and extends it until
a client of BlueZ's documented D-Bus API (BlueZ doc/org.bluez.Adapter.rst,
Device.rst, Media.rst, AgentManager.rst, Input.rst) sees what bluetoothd
would show it:

- adapters with any address, Connectable, PowerState and Roles, property
  writes checked and applied as bluetoothd applies them;
- devices that carry only the optional properties they have, Bonded, Input1
  on HID devices, and an Icon derived from the class or appearance;
- AgentManager1, Media1 and discovery sessions kept per caller and dropped
  when the caller leaves the bus;
- every object listing org.freedesktop.DBus.Introspectable and Properties
  among its interfaces, as gdbus does;
- on pairing, BlueZ's storage tree written the way bluetoothd writes it:
  <storage>/<ADAPTER>/<DEVICE>/info and <storage>/<ADAPTER>/cache/<DEVICE>,
  directories 0700, files 0600, replaced atomically; and, on adapter
  registration, bonds loaded back from that tree, as bluetoothd does at
  start.

bluez5's own adapter and device methods are replaced rather than reused:
they derive the adapter address from the last digit of its name, pair every
device as an Android phone, leave Connected unchanged in GetManagedObjects
on Connect, fail StartDiscovery with a KeyError, and have no Bonded or
Connectable; and dbusmock's AddMethod cannot see the caller, which per-caller
agents and endpoints need, so those methods are put on the objects with
dbus-python's own decorator (native_method below).

The test harness drives it through the sh.liken.BluezSim1 interface on /
(the Go package test/bluezsim). Parameters, as JSON: {"storage": path,
"late_write_ms": int, "page_timeout_ms": int}.
'''

import json
import os
import re
import secrets
import socket
import tempfile
import time

import dbus
import dbus.service
from gi.repository import GLib

from dbusmock import OBJECT_MANAGER_IFACE, mockobject
from dbusmock.templates import bluez5

BUS_NAME = bluez5.BUS_NAME
MAIN_OBJ = bluez5.MAIN_OBJ
SYSTEM_BUS = True
IS_OBJECT_MANAGER = True

SIM_IFACE = 'sh.liken.BluezSim1'
ADAPTER_IFACE = bluez5.ADAPTER_IFACE
DEVICE_IFACE = bluez5.DEVICE_IFACE
MEDIA_IFACE = bluez5.MEDIA_IFACE
AGENT_MANAGER_IFACE = bluez5.AGENT_MANAGER_IFACE
PROFILE_MANAGER_IFACE = bluez5.PROFILE_MANAGER_IFACE
INPUT_IFACE = 'org.bluez.Input1'
BATTERY_IFACE = 'org.bluez.Battery1'
PROPS_IFACE = dbus.PROPERTIES_IFACE
INTROSPECT_IFACE = 'org.freedesktop.DBus.Introspectable'
ENDPOINT_IFACE = 'org.bluez.MediaEndpoint1'
TRANSPORT_IFACE = 'org.bluez.MediaTransport1'

ERR = 'org.bluez.Error.'
DBUS_ERR = 'org.freedesktop.DBus.Error.'

BASE_UUID = '-0000-1000-8000-00805f9b34fb'
HID_UUID = '00001124' + BASE_UUID
# Media1.SupportedUUIDs of a BR/EDR adapter: A2DP source and sink.
MEDIA_UUIDS = ['0000110a' + BASE_UUID, '0000110b' + BASE_UUID]
A2DP_SOURCE_UUID, A2DP_SINK_UUID = MEDIA_UUIDS
AGENT_CAPABILITIES = ('DisplayOnly', 'DisplayYesNo', 'KeyboardOnly',
                      'NoInputNoOutput', 'KeyboardDisplay')
DISCOVERY_FILTERS = ['UUIDs', 'RSSI', 'Pathloss', 'Transport',
                     'DuplicateData', 'Discoverable', 'Pattern']

# Writable properties and their D-Bus signatures; every other property is
# read-only (gdbus answers PropertyReadOnly).
ADAPTER_WRITABLE = {'Alias': 's', 'Powered': 'b', 'Connectable': 'b',
                    'Discoverable': 'b', 'Pairable': 'b',
                    'PairableTimeout': 'u', 'DiscoverableTimeout': 'u'}
DEVICE_WRITABLE = {'Trusted': 'b', 'Blocked': 'b', 'WakeAllowed': 'b',
                   'Alias': 's'}
TRANSPORT_WRITABLE = {'Volume': 'q'}
SIGNATURE_TYPES = {'s': dbus.String, 'b': dbus.Boolean, 'u': dbus.UInt32, 'q': dbus.UInt16}

ADDRESS_RE = re.compile(r'^[0-9A-F]{2}(:[0-9A-F]{2}){5}$')
ADAPTER_NAME_RE = re.compile(r'^hci[0-9]+$')
MODALIAS_RE = re.compile(r'^(usb|bluetooth):v([0-9A-F]{4})p([0-9A-F]{4})d([0-9A-F]{4})$', re.I)

SIM = None  # the SimState, set by load()


class SimState:
    '''What bluetoothd keeps outside the D-Bus objects.'''

    def __init__(self, mock, storage, late_write_ms, page_timeout_ms):
        self.mock = mock
        self.storage = storage
        self.late_write_ms = late_write_ms
        self.page_timeout_ms = page_timeout_ms
        self.started = time.monotonic()
        self.connect_calls = []    # Device1.Connect calls, in arrival order
        self.agents = {}           # sender -> (path, capability)
        self.default_agent = None  # (sender, path)
        self.endpoints = {}        # (adapter, sender, path) -> {UUID, Codec, Capabilities}, in registration order
        self.transports = {}       # transport path -> Transport
        self.transport_count = 0   # numbers transport paths, as bluetoothd's static counter does
        self.players = {}          # (adapter, sender, path) -> {}
        self.applications = {}     # (adapter, sender, root) -> [endpoint paths]
        self.discovery = {}        # adapter path -> {sender: filter}
        self.adapter_uuids = {}    # adapter path -> its UUIDs with no endpoint
        self.log_agent = []        # agent calls made, in order

    def drop_sender(self, sender):
        '''Forget what a caller registered, as bluetoothd does when the
        caller's connection goes.'''
        if sender in self.agents:
            del self.agents[sender]
            if self.default_agent and self.default_agent[0] == sender:
                self.default_agent = None
        for table in (self.endpoints, self.players, self.applications):
            for key in [k for k in table if k[1] == sender]:
                del table[key]
        for transport in [t for t in self.transports.values() if t.sender == sender]:
            transport.destroy(notify=False)
        for transport in [t for t in self.transports.values() if t.owner == sender]:
            transport.drop_owner()
        for adapter_path in list(self.discovery):
            advertise_endpoints(adapter_path)
        for adapter_path, sessions in self.discovery.items():
            if sender in sessions:
                del sessions[sender]
                if not any(v is True for v in sessions.values()) and adapter_path in mockobject.objects:
                    update(mockobject.objects[adapter_path], ADAPTER_IFACE,
                           {'Discovering': dbus.Boolean(False)})


def advertise_endpoints(adapter_path):
    '''Set the adapter's UUIDs to its own plus the profile of every
    media endpoint registered on it, as bluetoothd does when an endpoint
    comes or goes: a registered A2DP source endpoint makes bluetoothd add
    the Audio Source SDP record, and the adapter then advertises that
    UUID (profiles/audio/media.c, src/adapter.c adapter_service_add).'''
    adapter = mockobject.objects.get(adapter_path)
    if adapter is None:
        return
    own = SIM.adapter_uuids.get(adapter_path, [])
    hosted = sorted({v['UUID'].lower() for (a, _s, _p), v in SIM.endpoints.items() if a == adapter_path} - set(own))
    update(adapter, ADAPTER_IFACE, {'UUIDs': dbus.Array(own + hosted, signature='s')})


def error(name, message):
    return dbus.exceptions.DBusException(message, name=name)


def native_method(obj, iface, name, in_sig, out_sig, func, sender=False, is_async=False):
    '''Put func on obj as D-Bus method iface.name. Unlike dbusmock's
    AddMethod, the method may learn its caller (sender=True: a "sender"
    keyword) and reply later (is_async=True: "reply" and "fail" keywords).
    dbusmock looks methods up in obj.methods first, so this one wins.'''
    kwargs = {}
    if sender:
        kwargs['sender_keyword'] = 'sender'
    if is_async:
        kwargs['async_callbacks'] = ('reply', 'fail')
    wrapped = dbus.service.method(iface, in_signature=in_sig, out_signature=out_sig, **kwargs)(func)
    wrapped.__name__ = name
    obj.methods.setdefault(iface, {})[name] = (in_sig, out_sig, '', wrapped)


def update(obj, iface, changes, invalidated=()):
    '''Set properties on obj (creating absent ones) and emit one
    PropertiesChanged with the values that actually changed.'''
    props = obj.props.setdefault(iface, {})
    changed = {}
    for key, value in changes.items():
        if key not in props or props[key] != value or type(props[key]) is not type(value):
            props[key] = value
            changed[key] = value
    gone = [k for k in invalidated if k in props]
    for k in gone:
        del props[k]
    if changed or gone:
        obj.EmitSignal(PROPS_IFACE, 'PropertiesChanged', 'sa{sv}as',
                       [iface, dbus.Dictionary(changed, signature='sv'),
                        dbus.Array(gone, signature='s')])
    return changed


def interfaces_added(path, ifaces):
    mockobject.objects['/'].EmitSignal(
        OBJECT_MANAGER_IFACE, 'InterfacesAdded', 'oa{sa{sv}}',
        [dbus.ObjectPath(path), dbus.Dictionary(ifaces, signature='sa{sv}')])


def interfaces_removed(path, names):
    mockobject.objects['/'].EmitSignal(
        OBJECT_MANAGER_IFACE, 'InterfacesRemoved', 'oas',
        [dbus.ObjectPath(path), dbus.Array(names, signature='s')])


def add_object(path, main_iface, props, extra=None):
    '''Create a mock object whose interfaces include the two gdbus lists
    for every object, and announce it with InterfacesAdded.'''
    root = mockobject.objects['/']
    root.AddObject(path, main_iface, props, [])
    obj = mockobject.objects[path]
    obj.props[INTROSPECT_IFACE] = {}
    obj.props[PROPS_IFACE] = {}
    for iface, iface_props in (extra or {}).items():
        obj.props[iface] = iface_props
    native_method(obj, PROPS_IFACE, 'Get', 'ss', 'v', prop_get)
    native_method(obj, PROPS_IFACE, 'Set', 'ssv', '', prop_set)
    interfaces_added(path, obj.props)
    return obj


def remove_object(path):
    obj = mockobject.objects[path]
    names = list(obj.props.keys())
    mockobject.objects['/'].RemoveObject(path)
    interfaces_removed(path, names)


# ---------------------------------------------------------------------------
# Properties: gdbus's answers (gdbus/object.c properties_get/properties_set)


def prop_get(obj, interface, name):
    if interface not in obj.props:
        raise error(DBUS_ERR + 'InvalidArgs', f"No such interface '{interface}'")
    if name not in obj.props[interface]:
        raise error(DBUS_ERR + 'InvalidArgs', f"No such property '{name}'")
    return obj.props[interface][name]


def prop_set(obj, interface, name, value):
    if interface not in obj.props:
        raise error(DBUS_ERR + 'InvalidArgs', f"No such interface '{interface}'")
    if name not in obj.props[interface]:
        raise error(DBUS_ERR + 'UnknownProperty', f"No such property '{name}'")
    writable = {ADAPTER_IFACE: ADAPTER_WRITABLE, DEVICE_IFACE: DEVICE_WRITABLE,
                TRANSPORT_IFACE: TRANSPORT_WRITABLE}.get(interface, {})
    if name not in writable:
        raise error(DBUS_ERR + 'PropertyReadOnly', f"Property '{name}' is not writable")
    want = SIGNATURE_TYPES[writable[name]]
    if type(value) is not want:  # noqa: E721 - the exact D-Bus type matters
        raise error(DBUS_ERR + 'InvalidSignature', f"Invalid signature for '{name}'")
    value = want(value)
    if interface == ADAPTER_IFACE:
        set_adapter_property(obj, name, value)
    elif interface == TRANSPORT_IFACE:
        SIM.transports[obj.path].set_volume(value)
    else:
        set_device_property(obj, name, value)


def set_adapter_property(adapter, name, value):
    props = adapter.props[ADAPTER_IFACE]
    if name == 'Alias':
        update(adapter, ADAPTER_IFACE, {'Alias': value if value else props['Name']})
    elif name == 'Powered':
        changes = {'Powered': value, 'PowerState': dbus.String('on' if value else 'off')}
        if not value:
            changes['Discoverable'] = dbus.Boolean(False)
            changes['Discovering'] = dbus.Boolean(False)
        update(adapter, ADAPTER_IFACE, changes)
    elif name == 'Connectable':
        changes = {'Connectable': value}
        if not value:
            # Adapter.rst: clearing Connectable clears Discoverable too.
            changes['Discoverable'] = dbus.Boolean(False)
        update(adapter, ADAPTER_IFACE, changes)
    elif name == 'Discoverable':
        if value and not props['Powered']:
            raise error(ERR + 'NotReady', 'Resource Not Ready')
        changes = {'Discoverable': value}
        if value and not props['Connectable']:
            # The kernel refuses Set Discoverable on a controller that is
            # not connectable (doc/mgmt-api.txt), so bluetoothd sets
            # Connectable first (src/adapter.c property_set_mode).
            changes = {'Connectable': dbus.Boolean(True), 'Discoverable': value}
        update(adapter, ADAPTER_IFACE, changes)
    else:
        update(adapter, ADAPTER_IFACE, {name: value})


def set_device_property(device, name, value):
    props = device.props[DEVICE_IFACE]
    if name == 'Alias':
        update(device, DEVICE_IFACE, {'Alias': value if value else default_alias(props)})
        device.sim_alias = str(value)
    elif name == 'WakeAllowed':
        update(device, DEVICE_IFACE, {'WakeAllowed': value})
        device.sim_wake = bool(value)
    elif name == 'Blocked':
        if value and props['Connected']:
            disconnect(device, 'org.bluez.Reason.Local', 'Connection terminated by local host')
        update(device, DEVICE_IFACE, {'Blocked': value})
    else:
        update(device, DEVICE_IFACE, {name: value})
    if props['Paired'] or os.path.exists(info_path(device)):
        store_general(device)


# ---------------------------------------------------------------------------
# Storage: BlueZ's key files (GKeyFile text, written with g_file_set_contents)


def read_keyfile(path):
    '''Parse a GKeyFile into {group: {key: value}}, keeping order.'''
    groups = {}
    current = None
    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.rstrip('\n')
            stripped = line.strip()
            if not stripped or stripped.startswith('#'):
                continue
            if stripped.startswith('[') and stripped.endswith(']'):
                current = groups.setdefault(stripped[1:-1], {})
            elif current is not None and '=' in line:
                key, value = line.split('=', 1)
                current[key.strip()] = value
    return groups


def load_keyfile(path):
    try:
        return read_keyfile(path)
    except FileNotFoundError:
        return {}


def dump_keyfile(groups):
    out = []
    for name, keys in groups.items():
        if not keys:
            continue
        if out:
            out.append('')
        out.append(f'[{name}]')
        out.extend(f'{k}={v}' for k, v in keys.items())
    return '\n'.join(out) + '\n' if out else ''


def make_dirs(path):
    '''Create path and missing parents at 0700, as bluetoothd's
    create_file does (g_mkdir_with_parents with S_IRWXU).'''
    missing = []
    while path and not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    for p in reversed(missing):
        os.mkdir(p, 0o700)
        os.chmod(p, 0o700)


def write_file(path, text):
    '''Replace path atomically with a 0600 file.'''
    make_dirs(os.path.dirname(path))
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=os.path.basename(path) + '.')
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def adapter_dir(adapter):
    return os.path.join(SIM.storage, str(adapter.props[ADAPTER_IFACE]['Address']))


def device_adapter(device):
    return mockobject.objects[str(device.props[DEVICE_IFACE]['Adapter'])]


def info_path(device):
    return os.path.join(adapter_dir(device_adapter(device)),
                        str(device.props[DEVICE_IFACE]['Address']), 'info')


def cache_path(device):
    return os.path.join(adapter_dir(device_adapter(device)), 'cache',
                        str(device.props[DEVICE_IFACE]['Address']))


def modify_keyfile(path, change):
    groups = load_keyfile(path)
    change(groups)
    write_file(path, dump_keyfile(groups))


def store_general(device, with_address_type=None):
    '''Write [General] (and [DeviceID]) of the device's info file, as
    bluetoothd's store_device_info_cb does, keeping the other groups.'''
    props = device.props[DEVICE_IFACE]
    le = device.sim_bearer == 'le'

    def change(groups):
        general = groups.setdefault('General', {})
        if 'Name' in props:
            general['Name'] = str(props['Name'])
        if device.sim_alias:
            general['Alias'] = device.sim_alias
        else:
            general.pop('Alias', None)
        if 'Class' in props:
            general['Class'] = '0x%06x' % int(props['Class'])
        if 'Appearance' in props:
            general['Appearance'] = '0x%04x' % int(props['Appearance'])
        address_type = with_address_type if with_address_type is not None else le and 'AddressType' in general
        if le and address_type:
            general['AddressType'] = 'static' if props['AddressType'] == 'random' else 'public'
        general['SupportedTechnologies'] = 'LE;' if le else 'BR/EDR;'
        general['Trusted'] = 'true' if props['Trusted'] else 'false'
        general['Blocked'] = 'true' if props['Blocked'] else 'false'
        # WakeAllowed is stored only when set: the classic fixture (an
        # 8Bitdo pad) has none, the LE one (a HOG mouse) has it.
        if device.sim_wake is not None:
            general['WakeAllowed'] = 'true' if device.sim_wake else 'false'
        if device.sim_services:
            general['Services'] = ''.join(u + ';' for u in device.sim_services)
        m = MODALIAS_RE.match(str(props.get('Modalias', '')))
        if m:
            groups['DeviceID'] = {
                'Source': '2' if m.group(1).lower() == 'usb' else '1',
                'Vendor': str(int(m.group(2), 16)),
                'Product': str(int(m.group(3), 16)),
                'Version': str(int(m.group(4), 16)),
            }
    modify_keyfile(info_path(device), change)


def store_keys(device):
    '''Write the bond's key groups, as bluetoothd's store_link_key and
    store_longtermkey do when the kernel reports new keys.'''
    legacy = bool(device.props[DEVICE_IFACE]['LegacyPairing'])

    def change(groups):
        if device.sim_bearer == 'le':
            groups['IdentityResolvingKey'] = {'Key': new_key()}
            for group in ('LongTermKey', 'PeripheralLongTermKey'):
                groups[group] = {
                    'Key': new_key(), 'Authenticated': '0', 'EncSize': '16',
                    'EDiv': str(secrets.randbits(16)), 'Rand': str(secrets.randbits(64)),
                }
        else:
            # Type 0 is a legacy combination key, 4 an unauthenticated
            # P-192 key from Secure Simple Pairing (Core spec, Vol 4 Part E
            # 7.7.24).
            groups['LinkKey'] = {'Key': new_key(), 'Type': '0' if legacy else '4', 'PINLength': '0'}
    modify_keyfile(info_path(device), change)


def store_services(device):
    '''Write what service discovery found: Services in info, the SDP
    records in the cache file's [ServiceRecords] (BR/EDR only).'''
    store_general(device)
    if device.sim_bearer == 'le' or not device.sim_services:
        return
    records = device.sim_records or {
        '0x%08x' % (0x00010000 + i): sdp_record(0x00010000 + i, uuid)
        for i, uuid in enumerate(device.sim_services)
    }

    def change(groups):
        groups['ServiceRecords'] = dict(records)
    modify_keyfile(cache_path(device), change)


def store_cached_name(device):
    '''Write the cache file's [General] Name, as bluetoothd does for every
    device whose name it learns, paired or not.'''
    props = device.props[DEVICE_IFACE]
    if 'Name' not in props:
        return

    def change(groups):
        groups.setdefault('General', {})['Name'] = str(props['Name'])
    modify_keyfile(cache_path(device), change)


def store_endpoints(device):
    '''Write the speaker's stream endpoints to the cache file's
    [Endpoints], as bluetoothd stores what AVDTP discovery found
    (profiles/audio/a2dp.c store_remote_seps): key the SEID, two hex
    digits; value SEP type (01, sink), codec type and delay reporting,
    each two hex digits, then the capabilities in hex, colon-separated.'''
    if not device.sim_endpoints:
        return

    def change(groups):
        groups['Endpoints'] = {
            '%02x' % (i + 1): '01:%02x:%02x:%s' % (e['Codec'], int(device.sim_delay_reporting), e['Capabilities'].hex())
            for i, e in enumerate(device.sim_endpoints)}
    modify_keyfile(cache_path(device), change)


def load_endpoints(cache):
    '''The stream endpoints in a cache file's [Endpoints], and whether they
    report delay; malformed entries are skipped, as bluetoothd skips them.'''
    endpoints, delay = [], False
    for seid in sorted(cache.get('Endpoints', {})):
        if seid == 'LastUsed':
            continue
        parts = cache['Endpoints'][seid].split(':')
        try:
            if len(parts) != 4 or int(parts[0], 16) != 1:
                continue
            endpoints.append({'Codec': int(parts[1], 16), 'Capabilities': bytes.fromhex(parts[3])})
            delay = delay or int(parts[2], 16) != 0
        except ValueError:
            continue
    return endpoints, delay


def remove_stored(device):
    '''Forget the bond: the device directory goes, and the cache keeps only
    the name (bluetoothd's device_remove_stored).'''
    dev_dir = os.path.dirname(info_path(device))
    if os.path.isdir(dev_dir):
        for name in os.listdir(dev_dir):
            os.unlink(os.path.join(dev_dir, name))
        os.rmdir(dev_dir)
    cache = cache_path(device)
    if os.path.exists(cache):
        def change(groups):
            groups.pop('ServiceRecords', None)
            groups.pop('Attributes', None)
            groups.pop('Endpoints', None)
        modify_keyfile(cache, change)


def new_key():
    return secrets.token_hex(16).upper()


def sdp_record(handle, uuid):
    '''A minimal SDP service record in the cache's hex form: attribute
    0x0000 (ServiceRecordHandle, uint32) and 0x0001 (ServiceClassIDList
    holding the UUID), as data elements (Core spec, Vol 3 Part B 3).'''
    short = uuid.endswith(BASE_UUID) and uuid.startswith('0000')
    uuid_de = ('19' + uuid[4:8]) if short else ('1C' + uuid.replace('-', ''))
    class_list = '35%02X' % (len(uuid_de) // 2) + uuid_de
    body = '090000' + '0A%08X' % handle + '090001' + class_list
    return ('35%02X' % (len(body) // 2) + body).upper()


# ---------------------------------------------------------------------------
# Icons: BlueZ derives a device's Icon from its class of device, or from
# its GAP appearance (src/dbus-common.c class_to_icon,
# gap_appearance_to_icon). The majors and categories bluetoothd names:


def class_icon(cls):
    major = (cls >> 8) & 0x1f
    minor = (cls >> 2) & 0x3f
    if major == 0x01:
        return 'computer'
    if major == 0x02:
        return {0x01: 'phone', 0x02: 'phone', 0x03: 'phone', 0x05: 'phone', 0x04: 'modem'}.get(minor)
    if major == 0x03:
        return 'network-wireless'
    if major == 0x04:
        if minor in (0x01, 0x02):
            return 'audio-headset'
        if minor == 0x06:
            return 'audio-headphones'
        if minor in (0x0b, 0x0c, 0x0d):
            return 'camera-video'
        return 'audio-card'
    if major == 0x05:
        kind = (cls >> 6) & 0x03
        sub = (cls >> 2) & 0x0f
        if kind == 0x00:
            return 'input-gaming' if sub in (0x01, 0x02) else None
        if kind == 0x01:
            return 'input-keyboard'
        if kind == 0x02:
            return 'input-tablet' if sub == 0x05 else 'input-mouse'
        return None
    if major == 0x06:
        if cls & 0x80:
            return 'printer'
        if cls & 0x20:
            return 'camera-photo'
        return None
    return None


def appearance_icon(appearance):
    category = appearance >> 6
    sub = appearance & 0x3f
    if category == 0x01:
        return 'phone'
    if category == 0x02:
        return 'computer'
    if category == 0x05:
        return 'video-display'
    if category == 0x0a:
        return 'multimedia-player'
    if category == 0x0b:
        return 'scanner'
    if category == 0x0f:
        return {0x01: 'input-keyboard', 0x02: 'input-mouse', 0x03: 'input-gaming',
                0x04: 'input-gaming', 0x05: 'input-tablet', 0x08: 'scanner'}.get(sub)
    return None


def icon_for(props):
    if 'Class' in props and int(props['Class']):
        return class_icon(int(props['Class']))
    if 'Appearance' in props and int(props['Appearance']):
        return appearance_icon(int(props['Appearance']))
    return None


def default_alias(props):
    '''bluetoothd's alias when none is set: the name, else the address
    with dashes.'''
    if 'Name' in props:
        return dbus.String(props['Name'])
    return dbus.String(str(props['Address']).replace(':', '-'))


# ---------------------------------------------------------------------------
# Adapters


def adapter_path(name):
    return '/org/bluez/' + name


def device_path(adapter_name, address):
    return adapter_path(adapter_name) + '/dev_' + address.replace(':', '_')


def check_address(address):
    address = str(address).upper()
    if not ADDRESS_RE.match(address):
        raise error(ERR + 'InvalidArguments', f'{address!r} is not a Bluetooth address')
    return address


def get_adapter(name):
    path = adapter_path(name)
    if path not in mockobject.objects:
        raise error(SIM_IFACE + '.NoSuchAdapter', f'adapter {name} does not exist')
    return mockobject.objects[path]


def get_device(adapter_name, address):
    path = device_path(adapter_name, check_address(address))
    get_adapter(adapter_name)
    if path not in mockobject.objects:
        raise error(SIM_IFACE + '.NoSuchDevice', f'device {address} does not exist on {adapter_name}')
    return mockobject.objects[path]


def create_adapter(name, address, overrides):
    if not ADAPTER_NAME_RE.match(name):
        raise error(SIM_IFACE + '.InvalidArguments', f'adapter name {name!r} is not hciN')
    address = check_address(address)
    path = adapter_path(name)
    if path in mockobject.objects:
        raise error(SIM_IFACE + '.AlreadyExists', f'adapter {name} exists')
    system_name = str(overrides.get('Name', 'liken'))
    props = {
        'Address': dbus.String(address),
        'AddressType': dbus.String('public'),
        'Name': dbus.String(system_name),
        'Alias': dbus.String(overrides.get('Alias', system_name)),
        'Class': dbus.UInt32(overrides.get('Class', 0x00010c)),
        # AutoEnable=true powers the adapter; a fresh bluetoothd leaves
        # page scan off, so Connectable starts false.
        'Powered': dbus.Boolean(overrides.get('Powered', True)),
        'Connectable': dbus.Boolean(overrides.get('Connectable', False)),
        'Discoverable': dbus.Boolean(False),
        'DiscoverableTimeout': dbus.UInt32(180),
        'Pairable': dbus.Boolean(overrides.get('Pairable', True)),
        'PairableTimeout': dbus.UInt32(0),
        'Discovering': dbus.Boolean(False),
        'UUIDs': dbus.Array(['00001200' + BASE_UUID, '00001800' + BASE_UUID,
                             '00001801' + BASE_UUID, '0000110e' + BASE_UUID,
                             '0000110c' + BASE_UUID], signature='s'),
        'Modalias': dbus.String('usb:v1D6Bp0246d0542'),
        'Roles': dbus.Array(['central', 'peripheral'], signature='s'),
    }
    props['PowerState'] = dbus.String('on' if props['Powered'] else 'off')
    adapter = add_object(path, ADAPTER_IFACE, props, {
        MEDIA_IFACE: {'SupportedUUIDs': dbus.Array(MEDIA_UUIDS, signature='s')},
    })
    for method, in_sig, out_sig, func, is_async in (
            ('StartDiscovery', '', '', start_discovery, False),
            ('StopDiscovery', '', '', stop_discovery, False),
            ('SetDiscoveryFilter', 'a{sv}', '', set_discovery_filter, False),
            ('GetDiscoveryFilters', '', 'as', get_discovery_filters, False),
            ('RemoveDevice', 'o', '', remove_device, False)):
        native_method(adapter, ADAPTER_IFACE, method, in_sig, out_sig, func, sender=True, is_async=is_async)
    for method, in_sig, func, is_async in (
            ('RegisterEndpoint', 'oa{sv}', register_endpoint, False),
            ('UnregisterEndpoint', 'o', unregister_endpoint, False),
            ('RegisterPlayer', 'oa{sv}', register_player, False),
            ('UnregisterPlayer', 'o', unregister_player, False),
            ('RegisterApplication', 'oa{sv}', register_application, True),
            ('UnregisterApplication', 'o', unregister_application, False)):
        native_method(adapter, MEDIA_IFACE, method, in_sig, '', func, sender=True, is_async=is_async)
    SIM.discovery[path] = {}
    SIM.adapter_uuids[path] = [str(u) for u in props['UUIDs']]
    make_dirs(adapter_dir(adapter))
    settings = os.path.join(adapter_dir(adapter), 'settings')
    if not os.path.exists(settings):
        write_file(settings, '')
    load_devices(name, adapter)
    return path


def load_devices(adapter_name, adapter):
    '''Bring back every device stored under the adapter, as bluetoothd's
    load_devices does at adapter registration: a device with keys is
    paired and bonded, none is connected.'''
    base = adapter_dir(adapter)
    for entry in sorted(os.listdir(base)):
        if not ADDRESS_RE.match(entry):
            continue
        info = os.path.join(base, entry, 'info')
        if not os.path.isfile(info):
            continue
        groups = read_keyfile(info)
        general = groups.get('General', {})
        cache_groups = load_keyfile(os.path.join(base, 'cache', entry))
        cache = cache_groups.get('General', {})
        bonded = any(g in groups for g in ('LinkKey', 'LongTermKey', 'PeripheralLongTermKey',
                                           'SlaveLongTermKey'))
        techs = general.get('SupportedTechnologies', 'BR/EDR;')
        spec = {
            'Bearer': 'le' if 'LE' in techs and 'BR/EDR' not in techs else 'bredr',
            'AddressType': 'random' if general.get('AddressType') == 'static' else 'public',
            'Trusted': general.get('Trusted') == 'true',
            'UUIDs': [full_uuid(u) for u in general.get('Services', '').split(';') if u],
        }
        endpoints, delay = load_endpoints(cache_groups)
        if endpoints:
            spec['Endpoints'] = endpoints
            spec['DelayReporting'] = delay
        name = general.get('Name', cache.get('Name'))
        if name:
            spec['Name'] = name
        if 'Alias' in general:
            spec['Alias'] = general['Alias']
        for key in ('Class', 'Appearance'):
            if key in general:
                spec[key] = int(general[key], 16)
        devid = groups.get('DeviceID')
        if devid:
            spec['Modalias'] = '%s:v%04Xp%04Xd%04X' % (
                'usb' if devid.get('Source') == '2' else 'bluetooth',
                int(devid.get('Vendor', 0)), int(devid.get('Product', 0)), int(devid.get('Version', 0)))
        wake = general.get('WakeAllowed')
        create_device(adapter_name, entry, spec, loaded={
            'bonded': bonded, 'blocked': general.get('Blocked') == 'true',
            'wake': None if wake is None else wake == 'true'})


def full_uuid(u):
    '''Services may hold 16- or 32-bit short forms (seen: "00001800");
    D-Bus carries 128-bit UUIDs.'''
    u = u.strip().lower()
    if len(u) == 4:
        return '0000' + u + BASE_UUID
    if len(u) == 8:
        return u + BASE_UUID
    return u


# Adapter1 methods (callers are tracked per D-Bus sender).


def start_discovery(adapter, sender=None):
    if not adapter.props[ADAPTER_IFACE]['Powered']:
        raise error(ERR + 'NotReady', 'Resource Not Ready')
    sessions = SIM.discovery[adapter.path]
    if sessions.get(sender) is True:
        raise error(ERR + 'InProgress', 'Operation already in progress')
    sessions[sender] = True
    update(adapter, ADAPTER_IFACE, {'Discovering': dbus.Boolean(True)})


def stop_discovery(adapter, sender=None):
    sessions = SIM.discovery[adapter.path]
    if sessions.get(sender) is not True:
        raise error(ERR + 'Failed', 'No discovery started')
    del sessions[sender]
    if not any(v is True for v in sessions.values()):
        update(adapter, ADAPTER_IFACE, {'Discovering': dbus.Boolean(False)})


def set_discovery_filter(adapter, discovery_filter, sender=None):
    sessions = SIM.discovery[adapter.path]
    if sessions.get(sender) is not True:
        sessions[sender] = False  # a filter without a session yet


def get_discovery_filters(adapter, sender=None):
    return dbus.Array(DISCOVERY_FILTERS, signature='s')


def remove_device(adapter, path, sender=None):
    path = str(path)
    device = mockobject.objects.get(path)
    if device is None or DEVICE_IFACE not in device.props or \
            str(device.props[DEVICE_IFACE]['Adapter']) != adapter.path:
        raise error(ERR + 'DoesNotExist', 'Does Not Exist')
    if device.props[DEVICE_IFACE]['Connected']:
        disconnect(device, 'org.bluez.Reason.Local', 'Connection terminated by local host')
    remove_stored(device)
    remove_object(path)


# Media1 methods.


def register_endpoint(adapter, endpoint, properties, sender=None):
    key = (adapter.path, sender, str(endpoint))
    if 'UUID' not in properties or not isinstance(properties['UUID'], str):
        raise error(ERR + 'InvalidArguments', 'Invalid arguments in method call')
    if 'Codec' not in properties or not isinstance(properties['Codec'], dbus.Byte):
        raise error(ERR + 'InvalidArguments', 'Invalid arguments in method call')
    if str(properties['UUID']).lower() not in MEDIA_UUIDS:
        raise error(ERR + 'NotSupported', 'Operation is not supported')
    if key in SIM.endpoints:
        raise error(ERR + 'AlreadyExists', 'Already Exists')
    SIM.endpoints[key] = {'UUID': str(properties['UUID']), 'Codec': int(properties['Codec']),
                          'Capabilities': bytes(properties.get('Capabilities', b''))}
    advertise_endpoints(adapter.path)


def unregister_endpoint(adapter, endpoint, sender=None):
    key = (adapter.path, sender, str(endpoint))
    if key not in SIM.endpoints:
        raise error(ERR + 'DoesNotExist', 'Does Not Exist')
    del SIM.endpoints[key]
    clear_endpoint(key)
    advertise_endpoints(adapter.path)


def clear_endpoint(key):
    '''An endpoint unregistered loses its streams, as media.c
    media_endpoint_remove clears each transport.'''
    for transport in [t for t in SIM.transports.values() if (t.adapter, t.sender, t.endpoint) == key]:
        transport.destroy(notify=True)


def register_player(adapter, player, properties, sender=None):
    key = (adapter.path, sender, str(player))
    if key in SIM.players:
        raise error(ERR + 'AlreadyExists', 'Already Exists')
    SIM.players[key] = {}


def unregister_player(adapter, player, sender=None):
    key = (adapter.path, sender, str(player))
    if key not in SIM.players:
        raise error(ERR + 'DoesNotExist', 'Does Not Exist')
    del SIM.players[key]


def register_application(adapter, root, options, sender=None, reply=None, fail=None):
    '''Like bluetoothd: ask the application's ObjectManager for its
    objects, register the MediaEndpoint1 objects found, then answer.'''
    key = (adapter.path, sender, str(root))
    if key in SIM.applications:
        fail(error(ERR + 'AlreadyExists', 'Already Exists'))
        return

    def got_objects(objects):
        endpoints = []
        for path, ifaces in objects.items():
            if ENDPOINT_IFACE in ifaces:
                props = ifaces[ENDPOINT_IFACE]
                endpoints.append(str(path))
                SIM.endpoints[(adapter.path, sender, str(path))] = {
                    'UUID': str(props.get('UUID', '')), 'Codec': int(props.get('Codec', 0)),
                    'Capabilities': bytes(props.get('Capabilities', b''))}
        SIM.applications[key] = sorted(endpoints)
        advertise_endpoints(adapter.path)
        reply()

    def no_objects(_err):
        fail(error(ERR + 'InvalidArguments', 'Invalid arguments in method call'))

    SIM.mock.bus_name.get_bus().call_async(
        sender, str(root), OBJECT_MANAGER_IFACE, 'GetManagedObjects', '', (),
        got_objects, no_objects, timeout=10.0)


def unregister_application(adapter, root, sender=None):
    key = (adapter.path, sender, str(root))
    if key not in SIM.applications:
        raise error(ERR + 'DoesNotExist', 'Does Not Exist')
    for path in SIM.applications.pop(key):
        SIM.endpoints.pop((adapter.path, sender, path), None)
        clear_endpoint((adapter.path, sender, path))
    advertise_endpoints(adapter.path)


# AgentManager1 methods, per caller (src/agent.c): one agent per
# connection, "" meaning KeyboardDisplay.


def register_agent(manager, agent, capability, sender=None):
    capability = str(capability) or 'KeyboardDisplay'
    if capability not in AGENT_CAPABILITIES:
        raise error(ERR + 'InvalidArguments', 'Invalid arguments in method call')
    if sender in SIM.agents:
        raise error(ERR + 'AlreadyExists', 'Already Exists')
    SIM.agents[sender] = (str(agent), capability)


def unregister_agent(manager, agent, sender=None):
    if SIM.agents.get(sender, (None,))[0] != str(agent):
        raise error(ERR + 'DoesNotExist', 'Does Not Exist')
    del SIM.agents[sender]
    if SIM.default_agent == (sender, str(agent)):
        SIM.default_agent = None


def request_default_agent(manager, agent, sender=None):
    if SIM.agents.get(sender, (None,))[0] != str(agent):
        raise error(ERR + 'DoesNotExist', 'Does Not Exist')
    SIM.default_agent = (sender, str(agent))


# ---------------------------------------------------------------------------
# Devices


def create_device(adapter_name, address, spec, loaded=None):
    '''Create a device object from spec (see AddDevice). loaded is set for
    a device read back from storage: {"bonded": bool, "blocked": bool,
    "wake": bool or None}.'''
    adapter = get_adapter(adapter_name)
    address = check_address(address)
    path = device_path(adapter_name, address)
    if path in mockobject.objects:
        raise error(SIM_IFACE + '.AlreadyExists', f'device {address} exists on {adapter_name}')
    bearer = str(spec.get('Bearer', 'bredr'))
    if bearer not in ('bredr', 'le'):
        raise error(SIM_IFACE + '.InvalidArguments', f'bearer {bearer!r} is not bredr or le')
    address_type = str(spec.get('AddressType', 'public'))
    if address_type not in ('public', 'random') or (bearer == 'bredr' and address_type != 'public'):
        raise error(SIM_IFACE + '.InvalidArguments', f'address type {address_type!r} on {bearer}')
    uuids = [str(u).lower() for u in spec.get('UUIDs', [])]
    props = {
        'Address': dbus.String(address),
        'AddressType': dbus.String(address_type),
        'Paired': dbus.Boolean(bool(loaded and loaded['bonded'])),
        'Bonded': dbus.Boolean(bool(loaded and loaded['bonded'])),
        'Trusted': dbus.Boolean(bool(spec.get('Trusted', False))),
        'Blocked': dbus.Boolean(bool(loaded and loaded['blocked'])),
        'LegacyPairing': dbus.Boolean(bool(spec.get('LegacyPairing', False))),
        'CablePairing': dbus.Boolean(False),
        'Connected': dbus.Boolean(False),
        'ServicesResolved': dbus.Boolean(False),
        'Adapter': dbus.ObjectPath(adapter.path),
    }
    # Optional properties exist only when known (Device.rst "optional").
    if spec.get('Name'):
        props['Name'] = dbus.String(spec['Name'])
    if 'RSSI' in spec:
        props['RSSI'] = dbus.Int16(int(spec['RSSI']))
    if spec.get('Class'):
        props['Class'] = dbus.UInt32(int(spec['Class']))
    if spec.get('Appearance'):
        props['Appearance'] = dbus.UInt16(int(spec['Appearance']))
    if spec.get('Modalias'):
        if not MODALIAS_RE.match(str(spec['Modalias'])):
            raise error(SIM_IFACE + '.InvalidArguments', f"modalias {spec['Modalias']!r} is not usb:/bluetooth:vXXXXpXXXXdXXXX")
        props['Modalias'] = dbus.String(spec['Modalias'])
    if uuids:
        props['UUIDs'] = dbus.Array(uuids, signature='s')
    icon = icon_for(props)
    if icon:
        props['Icon'] = dbus.String(icon)
    hid = HID_UUID in uuids or int(spec.get('Appearance', 0)) >> 6 == 0x0f
    if hid:
        props['WakeAllowed'] = dbus.Boolean(True)
    props['Alias'] = dbus.String(spec['Alias']) if spec.get('Alias') else default_alias(props)
    extra = {}
    if HID_UUID in uuids:
        extra[INPUT_IFACE] = {'ReconnectMode': dbus.String(spec.get('ReconnectMode', 'any'))}
    if spec.get('Battery') is not None:
        extra[BATTERY_IFACE] = {'Percentage': dbus.Byte(int(spec['Battery'])), 'Source': dbus.String('org.bluez.Battery1')}
    device = add_object(path, DEVICE_IFACE, props, extra)
    device.sim_bearer = bearer
    device.sim_wake = True if hid and bearer == 'le' else None
    if loaded and loaded.get('wake') is not None:
        device.sim_wake = loaded['wake']
    device.sim_alias = str(spec['Alias']) if spec.get('Alias') else ''
    device.sim_services = list(uuids) if loaded and loaded['bonded'] else []
    device.sim_uuids = uuids
    device.sim_records = {str(k): str(v) for k, v in dict(spec.get('ServiceRecords', {})).items()}
    device.sim_pairing = str(spec.get('Pairing', 'JustWorks'))
    if device.sim_pairing not in PAIRING_METHODS:
        raise error(SIM_IFACE + '.InvalidArguments', f'pairing {device.sim_pairing!r} is not one of {PAIRING_METHODS}')
    device.sim_secret = str(spec.get('Secret', ''))
    device.sim_pending = None  # (reply, fail, passkey) while a keyboard types
    device.sim_endpoints = [{'Codec': int(e['Codec']), 'Capabilities': bytes(e['Capabilities'])}
                            for e in spec.get('Endpoints', [])]
    if device.sim_endpoints and A2DP_SINK_UUID not in uuids:
        raise error(SIM_IFACE + '.InvalidArguments', f'a device with stream endpoints must offer {A2DP_SINK_UUID}')
    device.sim_seps = []
    device.sim_delay_reporting = bool(spec.get('DelayReporting', False))
    # AVRCP absolute volume (0-127), where the speaker supports it.
    device.sim_volume = int(spec['Volume']) if 'Volume' in spec else None
    device.sim_off = False  # switched off or out of range: it answers no page
    for method, in_sig, func in (
            ('Pair', '', device_pair_async),
            ('Connect', '', device_connect_async),
            ('ConnectProfile', 's', device_connect_profile_async)):
        native_method(device, DEVICE_IFACE, method, in_sig, '', func, sender=True, is_async=True)
    for method, in_sig, func in (
            ('Disconnect', '', device_disconnect),
            ('CancelPairing', '', device_cancel_pairing),
            ('DisconnectProfile', 's', device_disconnect_profile)):
        native_method(device, DEVICE_IFACE, method, in_sig, '', func, sender=True)
    if not loaded:
        store_cached_name(device)
    return device


def check_connect(device):
    '''What bluetoothd refuses before it pages: an adapter that is off,
    a blocked device, a link that is already up.'''
    if not device_adapter(device).props[ADAPTER_IFACE]['Powered']:
        raise error(ERR + 'NotReady', 'Resource Not Ready')
    if device.props[DEVICE_IFACE]['Blocked']:
        raise error(ERR + 'Failed', 'Operation failed')
    if device.props[DEVICE_IFACE]['Connected']:
        raise error(ERR + 'AlreadyConnected', 'Already Connected')


def connect(device):
    check_connect(device)
    link_up(device)


def link_up(device):
    update(device, DEVICE_IFACE, {'Connected': dbus.Boolean(True)})
    update(device, DEVICE_IFACE, {'ServicesResolved': dbus.Boolean(True)})
    if device.sim_endpoints and device.props[DEVICE_IFACE]['Paired']:
        # bluetoothd connects A2DP after the link for a bonded audio sink
        # (src/device.c device_connect_profiles); on an idle callback, so
        # the Connected signal goes out first.
        GLib.idle_add(lambda: a2dp_connect(device) and False)


def disconnect(device, reason, message):
    if not device.props[DEVICE_IFACE]['Connected']:
        raise error(ERR + 'NotConnected', 'Not Connected')
    a2dp_disconnect(device)
    update(device, DEVICE_IFACE, {'ServicesResolved': dbus.Boolean(False)})
    update(device, DEVICE_IFACE, {'Connected': dbus.Boolean(False)})
    device.EmitSignal(DEVICE_IFACE, 'Disconnected', 'ss', [reason, message])


def pair(device):
    '''Pair as bluetoothd records a pairing: [General] first, then the
    keys, then Bonded and Paired, then what service discovery found, and
    for LE the address type later, on an idle callback.'''
    props = device.props[DEVICE_IFACE]
    if props['Paired']:
        raise error(ERR + 'AlreadyExists', 'Already Exists')
    if not device_adapter(device).props[ADAPTER_IFACE]['Powered']:
        raise error(ERR + 'NotReady', 'Resource Not Ready')
    if props['Blocked']:
        raise error(ERR + 'Failed', 'Operation failed')
    store_general(device, with_address_type=False)
    store_keys(device)
    update(device, DEVICE_IFACE, {'Bonded': dbus.Boolean(True)})
    update(device, DEVICE_IFACE, {'Paired': dbus.Boolean(True)})
    device.sim_services = list(device.sim_uuids)
    store_cached_name(device)
    store_services(device)
    store_endpoints(device)
    if device.sim_bearer == 'le':
        def late():
            if device.path in mockobject.objects:
                store_general(device, with_address_type=True)
            return False
        if SIM.late_write_ms > 0:
            GLib.timeout_add(SIM.late_write_ms, late)
        else:
            GLib.idle_add(late)


def page(device, reply, fail):
    '''The host pages the device, as Device1.Connect and ConnectProfile do
    for a device whose link is down (the device may be paged, it never
    pages the host: a speaker switched on waits). A device that is on
    answers and the link comes up at once. A device switched off or out of
    range (SwitchOff) does not answer: after the controller's page timeout
    the kernel reports it (HCI status 0x04, EHOSTDOWN) and bluetoothd fails
    the call with org.bluez.Error.Failed "br-connection-page-timeout"
    (BlueZ 5.66 src/error.h, btd_error_bredr_conn_from_errno). A device
    switched on before the timeout ends answers then.'''
    try:
        check_connect(device)
    except dbus.exceptions.DBusException as e:
        fail(e)
        return

    def answer():
        if device.path not in mockobject.objects:
            fail(error(ERR + 'DoesNotExist', 'Does Not Exist'))
            return
        if device.sim_off:
            fail(error(ERR + 'Failed', 'br-connection-page-timeout'))
            return
        try:
            connect(device)
        except dbus.exceptions.DBusException as e:
            fail(e)
            return
        reply()

    if not device.sim_off:
        answer()
        return
    GLib.timeout_add(SIM.page_timeout_ms, lambda: answer() and False)


def device_connect_async(device, sender=None, reply=None, fail=None):
    '''Device1.Connect: the link through a page, then the profiles. Each
    call is recorded with its arrival time and outcome (State's
    connectCalls).'''
    call = {'device': device.path, 'sender': str(sender),
            'atNs': int((time.monotonic() - SIM.started) * 1e9), 'error': '', 'pending': True}
    SIM.connect_calls.append(call)

    def done(*_args):
        call['pending'] = False
        reply()

    def failed(e):
        call['pending'] = False
        call['error'] = f'{e.get_dbus_name()}: {e.get_dbus_message()}'
        fail(e)

    page(device, done, failed)


def device_disconnect(device, sender=None):
    disconnect(device, 'org.bluez.Reason.Local', 'Connection terminated by local host')


# How a device pairs (the association model its IO capability and the
# host's give, Core spec Vol 3 Part C 5.2.2), and which agent call
# bluetoothd makes for it (src/device.c, src/agent.c):
#   JustWorks      no agent call
#   DisplayPasskey a keyboard: DisplayPasskey, then the keyboard types
#                  (EnterPasskey on the control interface)
#   Confirm        numeric comparison: RequestConfirmation
#   PinCode        legacy: RequestPinCode, compared with Secret
#   Passkey        the device shows Secret: RequestPasskey
#   Fail           the radio fails: Secret is the BlueZ error name
PAIRING_METHODS = ('JustWorks', 'DisplayPasskey', 'Confirm', 'PinCode', 'Passkey', 'Fail')
AGENT_TIMEOUT = 60.0  # src/agent.c REQUEST_TIMEOUT


def device_pair_async(device, sender=None, reply=None, fail=None):
    '''Device1.Pair: checks as pair() does, then the agent call the
    device's pairing method needs, then the bond.'''
    props = device.props[DEVICE_IFACE]
    if props['Paired']:
        fail(error(ERR + 'AlreadyExists', 'Already Exists'))
        return
    method = device.sim_pairing
    if method == 'JustWorks':
        try:
            pair(device)
        except dbus.exceptions.DBusException as e:
            fail(e)
            return
        reply()
        return
    if method == 'Fail':
        fail(error(device.sim_secret or ERR + 'ConnectionAttemptFailed', 'Page Timeout'))
        return
    agent = SIM.default_agent
    if agent is None:
        fail(error(ERR + 'AuthenticationRejected', 'Authentication Rejected'))
        return
    bus = SIM.mock.bus_name.get_bus()
    path = dbus.ObjectPath(device.path)
    passkey = dbus.UInt32(secrets.randbelow(1000000))

    def done(*_args):
        try:
            pair(device)
        except dbus.exceptions.DBusException as e:
            fail(e)
            return
        reply()

    def refused(err):
        name = err.get_dbus_name() if hasattr(err, 'get_dbus_name') else ''
        if name == ERR + 'Canceled':
            fail(error(ERR + 'AuthenticationCanceled', 'Authentication Canceled'))
        else:
            fail(error(ERR + 'AuthenticationRejected', 'Authentication Rejected'))

    def agent_call(member, sig, args, on_reply):
        SIM.log_agent.append({'method': member, 'device': device.path})
        bus.call_async(agent[0], agent[1], 'org.bluez.Agent1', member, sig, args,
                       on_reply, refused, timeout=AGENT_TIMEOUT)

    if method == 'DisplayPasskey':
        def shown(*_args):
            device.sim_pending = (done, fail, int(passkey))
        agent_call('DisplayPasskey', 'ouq', (path, passkey, dbus.UInt16(0)), shown)
    elif method == 'Confirm':
        agent_call('RequestConfirmation', 'ou', (path, passkey), done)
    elif method == 'PinCode':
        def got_pin(pin):
            if str(pin) != device.sim_secret:
                fail(error(ERR + 'AuthenticationFailed', 'Authentication Failed'))
                return
            done()
        agent_call('RequestPinCode', 'o', (path,), got_pin)
    elif method == 'Passkey':
        def got_passkey(value):
            if int(value) != int(device.sim_secret or 0):
                fail(error(ERR + 'AuthenticationFailed', 'Authentication Failed'))
                return
            done()
        agent_call('RequestPasskey', 'o', (path,), got_passkey)


def device_cancel_pairing(device, sender=None):
    raise error(ERR + 'DoesNotExist', 'Does Not Exist')


def device_connect_profile_async(device, uuid, sender=None, reply=None, fail=None):
    if str(uuid).lower() not in device.sim_uuids:
        fail(error(ERR + 'NotAvailable', 'Operation currently not available'))
        return
    if str(uuid).lower() == A2DP_SINK_UUID and getattr(device, 'sim_a2dp_refusals', 0) > 0:
        # The speaker refuses the A2DP channel (busy with another host,
        # or a firmware that wants the link anew): bluetoothd answers
        # br-connection-profile-unavailable as org.bluez.Error.Failed.
        device.sim_a2dp_refusals -= 1
        fail(error(ERR + 'Failed', 'br-connection-profile-unavailable'))
        return
    if not device.props[DEVICE_IFACE]['Connected']:
        page(device, reply, fail)
        return
    if str(uuid).lower() == A2DP_SINK_UUID:
        a2dp_connect(device)
    reply()


def device_disconnect_profile(device, uuid, sender=None):
    if str(uuid).lower() not in device.sim_uuids:
        raise error(ERR + 'NotSupported', 'Operation is not supported')


# ---------------------------------------------------------------------------
# A2DP: a speaker's stream endpoints and transports (BlueZ
# profiles/audio/a2dp.c, media.c, transport.c; doc/org.bluez.MediaEndpoint.rst,
# org.bluez.MediaTransport.rst)
#
# A speaker (a device whose spec has Endpoints) gets, when its link comes
# up, one org.bluez.MediaEndpoint1 object per stream endpoint it offers, at
# <device>/sep<N>, as bluetoothd exports the remote SEPs AVDTP discovery
# found. Then bluetoothd configures a stream: it takes the local A2DP source
# endpoints in the order they were registered, and for the first whose
# codec a remote endpoint shares it calls the local endpoint's
# SelectConfiguration with the remote capabilities, creates a
# MediaTransport1 at <sep>/fd<N> and calls SetConfiguration with it. A
# client switches codecs by calling SetConfiguration on a remote endpoint:
# the old transport is cleared (ClearConfiguration, then the object goes)
# and a new one is configured. Acquire hands the client one end of a
# SOCK_SEQPACKET socket pair, the shape of the L2CAP socket bluetoothd
# passes; the simulator reads the other end and counts what arrives.

A2DP_WRITE_MTU = 895  # an EDR 3-DH5 L2CAP MTU, a common value for speakers
A2DP_READ_MTU = 895


class RemoteSep:
    '''A speaker's stream endpoint as bluetoothd exports it.'''

    def __init__(self, device, seid, codec, caps, delay_reporting):
        self.device = device
        self.path = f'{device.path}/sep{seid}'
        self.codec = int(codec)
        self.caps = bytes(caps)
        props = {
            'UUID': dbus.String(A2DP_SINK_UUID),
            'Codec': dbus.Byte(self.codec),
            'Capabilities': dbus.Array([dbus.Byte(b) for b in self.caps], signature='y'),
            'Device': dbus.ObjectPath(device.path),
            'DelayReporting': dbus.Boolean(delay_reporting),
        }
        obj = add_object(self.path, ENDPOINT_IFACE, props)
        sep = self

        def set_configuration(_obj, endpoint, properties, sender=None, reply=None, fail=None):
            sep.set_configuration(str(endpoint), properties, sender, reply, fail)
        native_method(obj, ENDPOINT_IFACE, 'SetConfiguration', 'oa{sv}', '', set_configuration,
                      sender=True, is_async=True)

    def matches(self, endpoint):
        '''Whether a local endpoint ({UUID, Codec, Capabilities}) can
        stream to this one: the same codec and, for a vendor codec, the
        same vendor and vendor codec id (a2dp.c endpoint_match_codec_ind).'''
        if endpoint['UUID'].lower() != A2DP_SOURCE_UUID or endpoint['Codec'] != self.codec:
            return False
        if self.codec == 0xff:
            return bytes(endpoint.get('Capabilities', b''))[:6] == self.caps[:6]
        return True

    def accepts(self, config):
        '''Whether config is a configuration of this endpoint's
        capabilities, as the speaker's AVDTP Set Configuration answer
        decides: the same length, nothing chosen that is not offered, and
        for SBC a bitpool range inside the offered one.'''
        if len(config) != len(self.caps):
            return False
        if self.codec == 0x00:
            return (config[0] & ~self.caps[0]) == 0 and (config[1] & ~self.caps[1]) == 0 and \
                self.caps[2] <= config[2] <= config[3] <= self.caps[3]
        start = 6 if self.codec == 0xff else 0
        if config[:start] != self.caps[:start]:
            return False
        return all((c & ~k) == 0 for c, k in zip(config[start:], self.caps[start:]))

    def set_configuration(self, endpoint_path, properties, sender, reply, fail):
        adapter = self.device.props[DEVICE_IFACE]['Adapter']
        key = (str(adapter), sender, endpoint_path)
        endpoint = SIM.endpoints.get(key)
        if endpoint is None or not self.matches(endpoint):
            fail(error(ERR + 'InvalidArguments', 'Invalid arguments in method call'))
            return
        config = bytes(properties.get('Capabilities', b''))
        if not self.accepts(config):
            fail(error(ERR + 'Failed', 'Invalid argument'))
            return
        for transport in device_transports(self.device):
            transport.destroy(notify=True)
        start_transport(self.device, self, key, config, reply, fail)


class Transport:
    '''A configured stream: org.bluez.MediaTransport1.'''

    def __init__(self, device, sep, key, config):
        SIM.transport_count += 1
        self.path = f'{sep.path}/fd{SIM.transport_count - 1}'
        self.device = device
        self.sep = sep
        self.adapter, self.sender, self.endpoint = key
        self.codec = sep.codec
        self.configuration = bytes(config)
        self.owner = None   # the unique name holding the socket
        self.mine = None    # the simulator's end of the socket pair
        self.watch = None
        self.bytes = 0
        self.packets = 0
        self.acquires = 0
        props = {
            'Device': dbus.ObjectPath(device.path),
            'UUID': dbus.String(SIM.endpoints[key]['UUID']),
            'Codec': dbus.Byte(self.codec),
            'Configuration': dbus.Array([dbus.Byte(b) for b in self.configuration], signature='y'),
            'State': dbus.String('idle'),
            'Endpoint': dbus.ObjectPath(sep.path),
        }
        if device.sim_delay_reporting:
            props['Delay'] = dbus.UInt16(1500)  # 150 ms, in 1/10 ms
        if device.sim_volume is not None:
            props['Volume'] = dbus.UInt16(device.sim_volume)
        self.obj = add_object(self.path, TRANSPORT_IFACE, props)
        SIM.transports[self.path] = self
        native_method(self.obj, TRANSPORT_IFACE, 'Acquire', '', 'hqq',
                      lambda _o, sender=None: self.acquire(sender, try_only=False), sender=True)
        native_method(self.obj, TRANSPORT_IFACE, 'TryAcquire', '', 'hqq',
                      lambda _o, sender=None: self.acquire(sender, try_only=True), sender=True)
        native_method(self.obj, TRANSPORT_IFACE, 'Release', '', '',
                      lambda _o, sender=None: self.release(sender), sender=True)

    def props(self):
        return self.obj.props[TRANSPORT_IFACE]

    def acquire(self, sender, try_only):
        if self.owner is not None:
            raise error(ERR + 'NotAuthorized', 'Operation Not Authorized')
        if try_only and self.props()['State'] != 'pending':
            raise error(ERR + 'NotAvailable', 'Operation currently not available')
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        mine.setblocking(False)
        self.mine = mine
        self.owner = sender
        self.acquires += 1
        self.watch = GLib.io_add_watch(mine.fileno(), GLib.PRIORITY_DEFAULT,
                                       GLib.IO_IN | GLib.IO_HUP | GLib.IO_ERR, self.on_data)
        fd = dbus.types.UnixFd(theirs)  # dbus-python keeps its own duplicate
        theirs.close()

        def active():
            if self.owner is not None and self.path in SIM.transports:
                update(self.obj, TRANSPORT_IFACE, {'State': dbus.String('active')})
            return False
        GLib.idle_add(active)
        return (fd, dbus.UInt16(A2DP_READ_MTU), dbus.UInt16(A2DP_WRITE_MTU))

    def on_data(self, _fd, _condition):
        if self.mine is None:
            return False
        while True:
            try:
                data = self.mine.recv(65536)
            except BlockingIOError:
                return True
            except OSError:
                data = b''
            if not data:
                # The client closed its end without Release: the stream
                # stays configured, and nothing more arrives.
                self.close_socket()
                return False
            self.bytes += len(data)
            self.packets += 1

    def close_socket(self):
        if self.watch is not None:
            GLib.source_remove(self.watch)
            self.watch = None
        if self.mine is not None:
            self.mine.close()
            self.mine = None

    def release(self, sender):
        if self.owner != sender:
            raise error(ERR + 'NotAuthorized', 'Operation Not Authorized')
        self.drop_owner()

    def drop_owner(self):
        self.close_socket()
        self.owner = None
        update(self.obj, TRANSPORT_IFACE, {'State': dbus.String('idle')})

    def set_volume(self, value):
        if 'Volume' not in self.props():
            raise error(DBUS_ERR + 'UnknownProperty', "No such property 'Volume'")
        if int(value) > 127:
            raise error(DBUS_ERR + 'InvalidArgs', 'Invalid arguments in method call')
        self.device.sim_volume = int(value)
        update(self.obj, TRANSPORT_IFACE, {'Volume': dbus.UInt16(value)})

    def destroy(self, notify):
        '''The stream closes: ClearConfiguration to the local endpoint
        (unless its owner is gone), then the object leaves the bus.'''
        self.close_socket()
        SIM.transports.pop(self.path, None)
        if notify:
            SIM.mock.bus_name.get_bus().call_async(
                self.sender, self.endpoint, ENDPOINT_IFACE, 'ClearConfiguration', 'o',
                (dbus.ObjectPath(self.path),), lambda *_a: None, lambda *_a: None, timeout=10.0)
        if self.path in mockobject.objects:
            remove_object(self.path)

    def state(self):
        props = self.props()
        return {'path': self.path, 'device': self.device.path, 'adapter': self.adapter,
                'sender': self.sender, 'endpoint': self.endpoint, 'remoteEndpoint': self.sep.path,
                'uuid': str(props['UUID']), 'codec': self.codec, 'configuration': self.configuration.hex(),
                'state': str(props['State']), 'volume': int(props['Volume']) if 'Volume' in props else -1,
                'owner': self.owner or '', 'acquires': self.acquires,
                'bytes': self.bytes, 'packets': self.packets}


def device_transports(device):
    return [t for t in SIM.transports.values() if t.device is device]


def start_transport(device, sep, key, config, reply=None, fail=None):
    '''Create the transport and hand it to the local endpoint with
    SetConfiguration; an endpoint that refuses it loses it again.'''
    transport = Transport(device, sep, key, config)
    props = dbus.Dictionary(dict(transport.props().items()), signature='sv')

    def done(*_args):
        if reply:
            reply()

    def refused(err):
        transport.destroy(notify=False)
        if fail:
            fail(error(ERR + 'Failed', f'SetConfiguration: {err}'))
    SIM.mock.bus_name.get_bus().call_async(
        key[1], key[2], ENDPOINT_IFACE, 'SetConfiguration', 'oa{sv}',
        (dbus.ObjectPath(transport.path), props), done, refused, timeout=10.0)


def a2dp_connect(device):
    '''The A2DP channel comes up: export the speaker's stream endpoints and
    configure a stream with the first local source endpoint that fits.'''
    if not device.sim_endpoints or device_transports(device) or device.path not in mockobject.objects:
        return
    if not device.props[DEVICE_IFACE]['Connected']:
        return
    if not device.sim_seps:
        device.sim_seps = [RemoteSep(device, i + 1, e['Codec'], e['Capabilities'], device.sim_delay_reporting)
                           for i, e in enumerate(device.sim_endpoints)]
    adapter = str(device.props[DEVICE_IFACE]['Adapter'])
    candidates = [(key, sep) for key, ep in SIM.endpoints.items() if key[0] == adapter
                  for sep in device.sim_seps if sep.matches(ep)]
    select_next(device, candidates)


def select_next(device, candidates):
    '''Offer the next (endpoint, remote endpoint) pair: SelectConfiguration,
    then, with a configuration the speaker accepts, SetConfiguration.'''
    if not candidates or not device.props[DEVICE_IFACE]['Connected'] or device_transports(device):
        return
    (key, sep), rest = candidates[0], candidates[1:]
    if key not in SIM.endpoints:
        select_next(device, rest)
        return

    def selected(config):
        config = bytes(config)
        if not device.props[DEVICE_IFACE]['Connected'] or key not in SIM.endpoints or \
                device_transports(device) or not sep.accepts(config):
            select_next(device, rest)
            return
        start_transport(device, sep, key, config)

    SIM.mock.bus_name.get_bus().call_async(
        key[1], key[2], ENDPOINT_IFACE, 'SelectConfiguration', 'ay',
        (dbus.Array([dbus.Byte(b) for b in sep.caps], signature='y'),),
        selected, lambda _err: select_next(device, rest), timeout=10.0, byte_arrays=True)


def a2dp_disconnect(device):
    '''The A2DP channel goes: every stream closes, and the remote stream
    endpoints leave the bus.'''
    for transport in device_transports(device):
        transport.destroy(notify=True)
    for sep in getattr(device, 'sim_seps', []):
        if sep.path in mockobject.objects:
            remove_object(sep.path)
    device.sim_seps = []


# ---------------------------------------------------------------------------
# The simulator's control interface on /, for the test harness.


def plain(value):
    '''D-Bus value to plain Python, for the spec dictionaries.'''
    if isinstance(value, (dbus.Array, list)):
        return [plain(v) for v in value]
    if isinstance(value, (dbus.Dictionary, dict)):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, dbus.Boolean):
        return bool(value)
    if isinstance(value, (dbus.String, dbus.ObjectPath, str)):
        return str(value)
    if isinstance(value, (int, dbus.Byte)):
        return int(value)
    return value


@dbus.service.method(SIM_IFACE, in_signature='ssa{sv}', out_signature='o')
def AddAdapter(_self, name, address, props):
    '''Register an adapter as hciN with the given address; devices stored
    under it come back paired.'''
    return dbus.ObjectPath(create_adapter(str(name), str(address), plain(props)))


@dbus.service.method(SIM_IFACE, in_signature='s', out_signature='')
def RemoveAdapter(_self, name):
    '''The adapter departs: its devices go first, then the adapter, each
    with InterfacesRemoved. Storage stays, as it does on disk.'''
    adapter = get_adapter(str(name))
    prefix = adapter.path + '/'
    for transport in [t for t in SIM.transports.values() if t.adapter == adapter.path]:
        transport.destroy(notify=True)
    for path in sorted((p for p in mockobject.objects if p.startswith(prefix)), reverse=True):
        remove_object(path)
    SIM.discovery.pop(adapter.path, None)
    remove_object(adapter.path)


@dbus.service.method(SIM_IFACE, in_signature='ssa{sv}', out_signature='o')
def AddDevice(_self, adapter_name, address, spec):
    '''A device comes into range (found by inquiry or advertising). spec
    keys: Name, Alias, Bearer ("bredr"|"le"), AddressType, Class,
    Appearance, Modalias, UUIDs, Trusted, LegacyPairing, ReconnectMode,
    ServiceRecords ({handle: hex}), Battery (Battery1.Percentage); for a speaker (A2DP sink) Endpoints
    ([{Codec: byte, Capabilities: bytes}], one per stream endpoint, in
    SEID order), DelayReporting (bool) and Volume (AVRCP absolute volume,
    0-127; absent when the speaker has none).'''
    return dbus.ObjectPath(create_device(str(adapter_name), str(address), plain(spec)).path)


@dbus.service.method(SIM_IFACE, in_signature='ss', out_signature='')
def PairDevice(_self, adapter_name, address):
    '''The device pairs (as if a person paired it with bluetoothctl).'''
    pair(get_device(str(adapter_name), str(address)))


@dbus.service.method(SIM_IFACE, in_signature='ssu', out_signature='')
def EnterPasskey(_self, adapter_name, address, passkey):
    '''The keyboard of a DisplayPasskey pairing types passkey and Enter:
    the pairing completes when it is the one displayed and fails with
    AuthenticationFailed otherwise.'''
    device = get_device(str(adapter_name), str(address))
    if device.sim_pending is None:
        raise error(SIM_IFACE + '.NotPairing', f'{address} is not waiting for a passkey')
    done, fail, want = device.sim_pending
    device.sim_pending = None
    if int(passkey) == want:
        done()
    else:
        fail(error(ERR + 'AuthenticationFailed', 'Authentication Failed'))


@dbus.service.method(SIM_IFACE, in_signature='ss', out_signature='')
def ConnectDevice(_self, adapter_name, address):
    '''The device connects (a controller switched on reconnects).'''
    device = get_device(str(adapter_name), str(address))
    if device.sim_off:
        raise error(SIM_IFACE + '.SwitchedOff', f'{address} is switched off (SwitchOn first)')
    connect(device)


@dbus.service.method(SIM_IFACE, in_signature='ssb', out_signature='')
def SetSwitchedOn(_self, adapter_name, address, on):
    '''The device is switched on (on) or off, or comes into range or
    leaves it. Switched off, a connected device drops its link as a
    speaker whose power button was pressed does (Disconnected reason
    org.bluez.Reason.Remote), and it answers no page until it is switched
    on; switched on, it waits to be paged and does not connect by
    itself.'''
    device = get_device(str(adapter_name), str(address))
    device.sim_off = not bool(on)
    if device.sim_off and device.props[DEVICE_IFACE]['Connected']:
        disconnect(device, 'org.bluez.Reason.Remote', 'Connection terminated by remote user')


@dbus.service.method(SIM_IFACE, in_signature='sss', out_signature='')
def DisconnectDevice(_self, adapter_name, address, reason):
    '''The link drops; reason is a Device1.Disconnected reason suffix:
    "Remote" (switched off), "Timeout" (out of range) or "Local".'''
    messages = {'Remote': 'Connection terminated by remote user',
                'Timeout': 'Connection timed out',
                'Local': 'Connection terminated by local host'}
    reason = str(reason) or 'Remote'
    if reason not in messages:
        raise error(SIM_IFACE + '.InvalidArguments', f'reason {reason!r} is not one of {sorted(messages)}')
    disconnect(get_device(str(adapter_name), str(address)), 'org.bluez.Reason.' + reason, messages[reason])


@dbus.service.method(SIM_IFACE, in_signature='ssi', out_signature='')
def LoseA2DP(_self, adapter_name, address, refusals):
    '''The speaker's A2DP channel goes while its link stays, as after a
    bluetoothd or bus restart that brought back only its other profiles:
    its streams close and its remote stream endpoints leave the bus. The
    next refusals Device1.ConnectProfile calls for the A2DP sink fail
    with org.bluez.Error.Failed; a new link (Connect) brings A2DP back.'''
    device = get_device(str(adapter_name), str(address))
    if not device.props[DEVICE_IFACE]['Connected']:
        raise error(ERR + 'NotConnected', 'Not Connected')
    a2dp_disconnect(device)
    device.sim_a2dp_refusals = int(refusals)


@dbus.service.method(SIM_IFACE, in_signature='ssi', out_signature='')
def SetBattery(_self, adapter_name, address, percentage):
    '''The device's charge as BlueZ's battery plugin publishes it
    (profiles/battery): 0 to 100 gives the device org.bluez.Battery1 with
    that Percentage (InterfacesAdded the first time, PropertiesChanged
    after); a negative value takes Battery1 away (InterfacesRemoved), as
    the plugin does when the link goes down.'''
    device = get_device(str(adapter_name), str(address))
    percentage = int(percentage)
    if percentage > 100:
        raise error(SIM_IFACE + '.InvalidArguments', f'battery {percentage}% is past 100')
    if percentage < 0:
        if BATTERY_IFACE in device.props:
            del device.props[BATTERY_IFACE]
            interfaces_removed(device.path, [BATTERY_IFACE])
        return
    if BATTERY_IFACE in device.props:
        update(device, BATTERY_IFACE, {'Percentage': dbus.Byte(percentage)})
        return
    device.props[BATTERY_IFACE] = {'Percentage': dbus.Byte(percentage), 'Source': dbus.String('org.bluez.Battery1')}
    interfaces_added(device.path, {BATTERY_IFACE: device.props[BATTERY_IFACE]})


@dbus.service.method(SIM_IFACE, in_signature='osa{sv}', out_signature='')
def UpdateObject(_self, path, interface, changes):
    '''Change properties as the radio would (read-only ones included),
    with one PropertiesChanged; an absent property is added.'''
    path = str(path)
    if path not in mockobject.objects:
        raise error(SIM_IFACE + '.NoSuchObject', f'no object {path}')
    obj = mockobject.objects[path]
    interface = str(interface)
    if interface not in obj.props:
        raise error(SIM_IFACE + '.NoSuchInterface', f'{path} has no {interface}')
    changed = update(obj, interface, dict(changes))
    if interface != DEVICE_IFACE:
        return
    follow = {}
    if 'Name' in changed and not obj.sim_alias:
        follow['Alias'] = default_alias(obj.props[DEVICE_IFACE])
    if {'Class', 'Appearance'} & set(changed):
        icon = icon_for(obj.props[DEVICE_IFACE])
        if icon:
            follow['Icon'] = dbus.String(icon)
    if follow:
        update(obj, DEVICE_IFACE, follow)
    if 'Name' in changed:
        store_cached_name(obj)


@dbus.service.method(SIM_IFACE, in_signature='', out_signature='s')
def State(_self):
    '''What callers registered, as JSON: agents, the default agent,
    endpoints, players, applications and discovery sessions; and the
    Device1.Connect calls made, with when each arrived and how it ended.'''
    return json.dumps({
        'agents': [{'sender': s, 'path': p, 'capability': c} for s, (p, c) in sorted(SIM.agents.items())],
        'defaultAgent': {'sender': SIM.default_agent[0], 'path': SIM.default_agent[1]} if SIM.default_agent else None,
        'endpoints': [{'adapter': a, 'sender': s, 'path': p, 'uuid': v['UUID'], 'codec': v['Codec']}
                      for (a, s, p), v in SIM.endpoints.items()],  # registration order
        'players': [{'adapter': a, 'sender': s, 'path': p} for (a, s, p) in sorted(SIM.players)],
        'applications': [{'adapter': a, 'sender': s, 'path': p, 'endpoints': e}
                         for (a, s, p), e in sorted(SIM.applications.items())],
        'discovery': [{'adapter': a, 'sender': s} for a, sessions in sorted(SIM.discovery.items())
                      for s, active in sorted(sessions.items()) if active is True],
        'agentCalls': SIM.log_agent,
        'transports': [t.state() for _p, t in sorted(SIM.transports.items())],
        'connectCalls': SIM.connect_calls,
    })


def load(mock, parameters):
    global SIM  # pylint: disable=global-statement
    bluez5.load(mock, parameters)
    storage = str(parameters.get('storage', ''))
    if not os.path.isabs(storage):
        raise error(SIM_IFACE + '.InvalidArguments', f'storage {storage!r} is not an absolute path')
    # The controller's default page timeout: 0x2000 slots of 0.625 ms
    # (Bluetooth Core Vol 4 Part E 7.3.16, Write Page Timeout).
    SIM = SimState(mock, storage, int(parameters.get('late_write_ms', 0)), int(parameters.get('page_timeout_ms', 5120)))

    manager = mockobject.objects['/org/bluez']
    manager.props[INTROSPECT_IFACE] = {}
    manager.props[PROPS_IFACE] = {}
    manager.props[PROFILE_MANAGER_IFACE] = {}
    native_method(manager, AGENT_MANAGER_IFACE, 'RegisterAgent', 'os', '', register_agent, sender=True)
    native_method(manager, AGENT_MANAGER_IFACE, 'UnregisterAgent', 'o', '', unregister_agent, sender=True)
    native_method(manager, AGENT_MANAGER_IFACE, 'RequestDefaultAgent', 'o', '', request_default_agent, sender=True)

    def owner_changed(name, _old, new):
        if name.startswith(':') and not new:
            SIM.drop_sender(name)
    mock.bus_name.get_bus().add_signal_receiver(
        owner_changed, signal_name='NameOwnerChanged', dbus_interface='org.freedesktop.DBus',
        path='/org/freedesktop/DBus', bus_name='org.freedesktop.DBus')
