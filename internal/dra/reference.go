// SPDX-License-Identifier: Apache-2.0

package dra

import resourceapi "k8s.io/api/resource/v1"

// AttributeDoc documents one attribute a driver may publish on its
// devices, for people writing CEL selectors. Name is the attribute's name
// as it appears in the ResourceSlice: unqualified names are in the
// driver's own domain, device.attributes["<driver>"].<name>. Type is the
// DeviceAttribute field that carries the value: "string", "int", "bool"
// or "version". Doc says what the value is and when it is absent.
type AttributeDoc struct {
	Name QualifiedName
	Type string
	Doc  string
}

// TaintDoc documents one device taint a driver may set: its key, the
// effect it is set with, and when.
type TaintDoc struct {
	Key    string
	Effect resourceapi.DeviceTaintEffect
	Doc    string
}

// ProblemDoc documents one Device.Problem a driver may give its devices,
// which the pods using a device show as the message of its health: the
// text (a part that varies is described in Doc) and when it is given.
type ProblemDoc struct {
	Problem string
	Doc     string
}
