package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liken-sh/operators/test/e2e/harness"
	"github.com/liken-sh/operators/test/e2e/testdriver"
)

// waitForDriverSlice waits until the test driver's pool is in the API.
func waitForDriverSlice(ctx context.Context, c *harness.Cluster) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		list, err := c.Client().ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.driver=" + testdriver.Name})
		if err == nil && len(list.Items) > 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the %s driver published no ResourceSlice within 30s", testdriver.Name)
}

// printDevices writes one line per published device: driver, pool,
// device, attributes and taints.
func printDevices(ctx context.Context, w io.Writer, c *harness.Cluster) error {
	list, err := c.Client().ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "DRIVER\tPOOL\tDEVICE\tATTRIBUTES\tTAINTS")
	for _, s := range list.Items {
		for _, d := range s.Spec.Devices {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Spec.Driver, s.Spec.Pool.Name, d.Name, attributes(d.Attributes), taints(d.Taints))
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

func taints(ts []resourceapi.DeviceTaint) string {
	if len(ts) == 0 {
		return "-"
	}
	var out []string
	for _, t := range ts {
		out = append(out, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
	}
	return strings.Join(out, ",")
}
