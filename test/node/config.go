// SPDX-License-Identifier: Apache-2.0

package node

import (
	"fmt"
	"path/filepath"
)

// PauseImage is the sandbox image containerd runs for every pod. Nothing
// can be pulled here, so it must be imported like every other image.
const PauseImage = "registry.k8s.io/pause:3.10.2"

// Bridge is the CNI bridge pods without hostNetwork attach to, and
// PodSubnet its host-local address range. Nothing is routed off the
// machine: no masquerade, and the subnet is one no other network here
// uses.
const (
	Bridge    = "liken-tier0"
	PodSubnet = "10.244.77.0/24"
)

// containerdConfig is containerd's configuration (version 3): its own
// root and state under dir, sockets in sockDir, so nothing collides with a system containerd;
// overlayfs; the imported pause image pinned; CDI specs read from
// /var/run/cdi; and the settings this machine needs:
//
//   - restrict_oom_score_adj: processes here lack CAP_SYS_RESOURCE, so runc
//     cannot give a container a negative oom_score_adj and would fail
//     every sandbox ("failed to update /proc/self/oom_score_adj");
//   - the hugetlb controller exists only in a partial cgroup2 mount, so it
//     is not used;
//   - NRI is off (nothing uses it, and it would leave /run/nri behind).
func containerdConfig(dir, sockDir, cniDir string) string {
	return fmt.Sprintf(`version = 3
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins.'io.containerd.internal.v1.opt']
  path = %[5]q

[plugins.'io.containerd.nri.v1.nri']
  disable = true

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %[6]q

[plugins.'io.containerd.cri.v1.runtime']
  cdi_spec_dirs = ['/etc/cdi', '/var/run/cdi']
  restrict_oom_score_adj = true
  disable_hugetlb_controller = true
  tolerate_missing_hugetlb_controller = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = '/usr/sbin/runc'
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['/usr/lib/cni']
    conf_dir = %[7]q
    use_internal_loopback = true

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = '127.0.0.1'
`,
		filepath.Join(dir, "root"), filepath.Join(dir, "state"),
		filepath.Join(sockDir, "containerd.sock"), filepath.Join(sockDir, "ttrpc.sock"),
		filepath.Join(dir, "opt"), PauseImage, cniDir)
}

// cniConfig is the pod network: a bridge with host-local addresses, no
// masquerade and no route off the machine.
func cniConfig(dir string) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "liken-tier",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "dataDir": %q,
        "ranges": [[{"subnet": %q}]]
      }
    }
  ]
}
`, Bridge, filepath.Join(dir, "ipam"), PodSubnet)
}

// kubeletConfig is the KubeletConfiguration: cgroup v1 through cgroupfs,
// the tier's containerd, loopback-only serving with client certificates of
// the cluster's CA, evictions lowered so a busy CI disk evicts nothing,
// image garbage collection off (every image was imported and none can be
// pulled again), and pod logs in the run's own directory.
func kubeletConfig(dir, socket, caFile string, port, healthzPort int) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%[1]s
failSwapOn: false
address: 127.0.0.1
port: %[2]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: %[4]s
authorization:
  mode: AlwaysAllow
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  imagefs.available: 1%%
  nodefs.inodesFree: 1%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
nodeStatusUpdateFrequency: 5s
podLogsDir: %[5]s
serializeImagePulls: false
shutdownGracePeriod: 0s
`, socket, port, healthzPort, caFile, filepath.Join(dir, "pod-logs"))
}
