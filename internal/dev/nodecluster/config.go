package nodecluster

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Ports inside the node's namespace.
const (
	apiServerPort = 6443
	etcdPort      = 2379
	etcdPeerPort  = 2380
	kubeletPort   = 10250
	// Health endpoints bound on the node's address, so the host can read
	// them; they answer "ok" and nothing else.
	kubeProxyHealthPort = 10256
	coreDNSReadyPort    = 8181
	// ClusterDomain is the DNS suffix of Service names.
	ClusterDomain = "cluster.local"
)

// kubeconfig renders a kubeconfig that reaches server with a client
// certificate.
func kubeconfig(server string, caPEM []byte, p pair) []byte {
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: ragcanary
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: user
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: ragcanary
  context: {cluster: ragcanary, user: user}
current-context: ragcanary
`, server, b64(caPEM), b64(p.cert), b64(p.key)))
}

// containerdConfig is containerd's configuration: everything under the
// cluster's directory, the CRI plugin with runc (cgroupfs, as the kubelet),
// the CNI plugins built into bin/cni, the pause image built here, and every
// registry sent to the trap so an attempted pull fails at once.
func containerdConfig(l layout, binDir, runc, pause string) string {
	return fmt.Sprintf(`version = 3
root = %q
state = %q
disabled_plugins = ["io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing", "io.containerd.nri.v1.nri"]

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %q
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = %q

[plugins.'io.containerd.cri.v1.runtime']
  enable_selinux = false
  netns_mounts_under_state_dir = true
  # This machine grants no CAP_SYS_RESOURCE, so no process may lower its
  # OOM score below containerd's own (the CRI asks -998 for sandboxes).
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%q]
    conf_dir = %q
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %q
        Root = %q
        SystemdCgroup = false

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`, l.containerdRoot, l.containerdState, l.containerdSocket, l.containerdSocket+".ttrpc",
		pause, l.registryConfig, filepath.Join(binDir, "cni"), l.cniConf, runc, filepath.Join(l.containerdState, "runc"))
}

// registryTrap sends every registry (containerd's _default host) to a
// closed loopback port inside the node: a pull fails at once, no name is
// ever looked up, and the attempt is in containerd's log.
const registryTrap = `server = "http://127.0.0.1:1"

[host."http://127.0.0.1:1"]
  capabilities = ["pull", "resolve"]
`

// cniConfig is the Pods' network: a bridge with its own gateway, no
// masquerade, and routes only to the Services and the node's link, so a
// Pod reaches the API server, CoreDNS and other Pods, and nothing else.
func cniConfig(n Network, ipamDir string) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "ragcanary",
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": n.Bridge, "isGateway": true, "ipMasq": false, "hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": ipamDir,
					"ranges":  [][]map[string]string{{{"subnet": n.PodCIDR.String(), "gateway": n.Gateway.String()}}},
					"routes":  []map[string]string{{"dst": n.ServiceCIDR.String()}, {"dst": n.LinkCIDR()}},
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// kubeletConfig runs the kubelet on cgroup v1 with cgroupfs under the
// cluster's own cgroup root, its state, logs and serving pair under the
// cluster's directory, CoreDNS as the Pods' resolver and no upstream
// resolver at all, and eviction thresholds low enough that a full disk
// elsewhere on the machine does not evict the tests' Pods.
func kubeletConfig(l layout, n Network, cg cgroupTree, certFile, keyFile string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %q
cgroupsPerQOS: true
enforceNodeAllocatable: ["pods"]
containerRuntimeEndpoint: unix://%s
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: %q
tlsPrivateKeyFile: %q
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization:
  mode: Webhook
clusterDomain: %s
clusterDNS: [%s]
resolvConf: %q
podLogsDir: %q
failSwapOn: false
oomScoreAdj: 0
rotateCertificates: false
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
nodeStatusReportFrequency: 10s
syncFrequency: 10s
shutdownGracePeriod: 0s
`, "/"+cg.Root, l.containerdSocket, n.NodeIP, kubeletPort, certFile, keyFile, l.caFile,
		ClusterDomain, n.NodeIP, l.resolvConf, l.podLogs)
}

// kubeProxyConfig is kube-proxy in iptables mode inside the node.
func kubeProxyConfig(n Network, kubeconfigFile, nodeName string) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: %q
hostnameOverride: %s
clusterCIDR: %s
bindAddress: %s
healthzBindAddress: %s:%d
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: [%s/32]
oomScoreAdj: 0
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, kubeconfigFile, nodeName, n.PodCIDR, n.NodeIP, n.NodeIP, kubeProxyHealthPort, n.NodeIP)
}

// corefile answers cluster names from the API server and forwards nothing:
// an outside name gets an error from the node, never an answer from
// beyond it.
func corefile(n Network, kubeconfigFile string) string {
	return fmt.Sprintf(`.:53 {
    bind %s
    errors
    ready %s:%d
    kubernetes %s in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
}
`, n.NodeIP, n.NodeIP, coreDNSReadyPort, ClusterDomain, kubeconfigFile)
}

// coreDNSRBAC lets CoreDNS's user read what the kubernetes plugin watches.
const coreDNSRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ragcanary:coredns
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: ragcanary:coredns
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ragcanary:coredns}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: ragcanary:coredns}
`

func writeFiles(files map[string][]byte) error {
	for path, data := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func join(s ...string) string { return strings.Join(s, ",") }
