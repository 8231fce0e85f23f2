// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/test/e2e/harness"
)

// waitForSlice waits until one of driver's slices satisfies ok (any slice
// when ok is nil), for at most 30 s.
func waitForSlice(ctx context.Context, c *harness.Cluster, driver string, ok func(*resourceapi.ResourceSlice) bool) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		list, err := c.Client().ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.driver=" + driver})
		if err == nil {
			for i := range list.Items {
				if ok == nil || ok(&list.Items[i]) {
					return nil
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the %s driver published no ResourceSlice in the expected state within 30s", driver)
}

// printDevices writes one line per device driver publishes (every
// driver's when driver is ""): driver, pool, device, taints and
// attributes.
func printDevices(ctx context.Context, w io.Writer, c *harness.Cluster, driver string) error {
	opts := metav1.ListOptions{}
	if driver != "" {
		opts.FieldSelector = "spec.driver=" + driver
	}
	list, err := c.Client().ResourceV1().ResourceSlices().List(ctx, opts)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "DRIVER\tPOOL\tDEVICE\tTAINTS\tATTRIBUTES")
	for _, s := range list.Items {
		for _, d := range s.Spec.Devices {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Spec.Driver, s.Spec.Pool.Name, d.Name, taints(d.Taints), attributes(d.Attributes))
		}
	}
	return tw.Flush()
}

func attributes(attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) string {
	var out []string
	for k, v := range attrs {
		var s string
		switch {
		case v.StringValue != nil:
			s = fmt.Sprintf("%q", *v.StringValue)
		case v.IntValue != nil:
			s = fmt.Sprint(*v.IntValue)
		case v.BoolValue != nil:
			s = fmt.Sprint(*v.BoolValue)
		case v.VersionValue != nil:
			s = *v.VersionValue
		}
		out = append(out, fmt.Sprintf("%s=%s", k, s))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// taints prints key[=value]:Effect, as kubectl prints node taints.
func taints(ts []resourceapi.DeviceTaint) string {
	if len(ts) == 0 {
		return "-"
	}
	var out []string
	for _, t := range ts {
		kv := t.Key
		if t.Value != "" {
			kv += "=" + t.Value
		}
		out = append(out, kv+":"+string(t.Effect))
	}
	return strings.Join(out, ",")
}

func indentJSON(data []byte) string {
	var out bytes.Buffer
	if err := json.Indent(&out, data, "    ", "  "); err != nil {
		return string(data)
	}
	return "    " + out.String()
}

// finishEviction waits, for at most 15 s, until kube-controller-manager's
// device taint eviction marks pod ns/name for deletion (a NoExecute taint
// on a device its claim ns/claim holds), then does the kubelet's part,
// which this node has no real kubelet for: it unprepares the claim
// through the driver's socket (registered in registrarDir), as the
// kubelet does once the pod's containers stopped, and removes the pod
// (grace period 0). since is when the taint's cause happened.
func finishEviction(ctx context.Context, c *harness.Cluster, ns, name, claim, driver, registrarDir string, since time.Time) error {
	pods := c.Client().CoreV1().Pods(ns)
	deadline := time.Now().Add(15 * time.Second)
	for {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err == nil && p.DeletionTimestamp != nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pod %s/%s was not evicted within 15s of its device's NoExecute taint", ns, name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(since)
	rc, err := c.Client().ResourceV1().ResourceClaims(ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := unprepare(ctx, c, driver, registrarDir, rc); err != nil {
		return err
	}
	fmt.Printf("  pod %s/%s evicted by kube-controller-manager's device taint eviction %s after the event; the fake kubelet unprepares claim %s/%s and removes the pod\n",
		ns, name, took.Round(10*time.Millisecond), ns, claim)
	zero := int64(0)
	return pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
}

// met says whether a figure met its target.
func met(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}
