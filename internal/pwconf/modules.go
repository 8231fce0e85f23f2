// SPDX-License-Identifier: Apache-2.0

package pwconf

import "fmt"

// Module is one entry of a configuration's context.modules.
type Module struct {
	Name  string
	Flags []string
}

// Required reports whether PipeWire refuses to start without the module:
// it is required unless its flags say "ifexists" (load it only if it is
// installed) or "nofail" (carry on when it does not load). A condition on
// the entry does not make it optional: the stock conditions hold unless a
// fragment sets a property to false, and the build sets none.
func (m Module) Required() bool {
	for _, f := range m.Flags {
		if f == "ifexists" || f == "nofail" {
			return false
		}
	}
	return true
}

// Modules returns the context.modules of a configuration file, in order.
func Modules(conf Object) ([]Module, error) {
	v, ok := conf.Get("context.modules")
	if !ok {
		return nil, nil
	}
	list, ok := v.(Array)
	if !ok {
		return nil, fmt.Errorf("pwconf: context.modules is not an array")
	}
	var mods []Module
	for i, item := range list {
		obj, ok := item.(Object)
		if !ok || obj.String("name") == "" {
			return nil, fmt.Errorf("pwconf: context.modules[%d] is not an object with a name", i)
		}
		m := Module{Name: obj.String("name")}
		if flags, ok := obj.Get("flags"); ok {
			arr, ok := flags.(Array)
			if !ok {
				return nil, fmt.Errorf("pwconf: %s: flags is not an array", m.Name)
			}
			for _, f := range arr {
				if s, ok := f.(string); ok {
					m.Flags = append(m.Flags, s)
				}
			}
		}
		mods = append(mods, m)
	}
	return mods, nil
}

// WirePlumberPipeWireModules returns the names of the PipeWire modules a
// WirePlumber configuration loads as components (type = pw-module).
// Whether one loads depends on the profile's features, so all are
// returned, for a caller that keeps every one.
func WirePlumberPipeWireModules(conf Object) ([]string, error) {
	v, ok := conf.Get("wireplumber.components")
	if !ok {
		return nil, nil
	}
	list, ok := v.(Array)
	if !ok {
		return nil, fmt.Errorf("pwconf: wireplumber.components is not an array")
	}
	var names []string
	for _, item := range list {
		obj, ok := item.(Object)
		if ok && obj.String("type") == "pw-module" && obj.String("name") != "" {
			names = append(names, obj.String("name"))
		}
	}
	return names, nil
}
