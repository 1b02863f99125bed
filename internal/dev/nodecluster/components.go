package nodecluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// files are the configuration paths the components are started with.
type files struct {
	etcdArgs, apiserverArgs, kcmArgs, schedulerArgs []string
	kubeletArgs, proxyArgs, corednsArgs             []string
	containerdConfig                                string
}

// Timeouts of the bounded waits, sized for a loaded 2-core machine.
const (
	apiServerReadyTimeout = 2 * time.Minute
	runtimeReadyTimeout   = time.Minute
	NodeReadyTimeout      = 3 * time.Minute
)

// writeConfig makes the PKI, the kubeconfigs and every configuration file,
// and returns each component's arguments.
func (c *Cluster) writeConfig() (files, error) {
	l, n := c.l, c.Network
	for _, d := range []string{l.pki, l.logs, l.etcdData, l.containerdRoot, l.containerdState, l.cniConf, l.cniIPAM, l.kubeletRoot, l.podLogs,
		filepath.Join(l.registryConfig, "_default")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return files{}, err
		}
	}
	authority, err := newCA()
	if err != nil {
		return files{}, err
	}
	if err := os.WriteFile(l.caFile, authority.pem, 0o600); err != nil {
		return files{}, err
	}
	nodeIP := n.NodeIP.String()
	serving, err := authority.issue("kube-apiserver", nil, []string{nodeIP, n.APIServiceIP.String(), "kubernetes", "kubernetes.default",
		"kubernetes.default.svc", "kubernetes.default.svc." + ClusterDomain})
	if err != nil {
		return files{}, err
	}
	apiCert, apiKey, err := serving.write(l.pki, "apiserver")
	if err != nil {
		return files{}, err
	}
	kubeletServing, err := authority.issue("system:node:"+c.opts.NodeName, []string{"system:nodes"}, []string{nodeIP, c.opts.NodeName})
	if err != nil {
		return files{}, err
	}
	kubeletCert, kubeletKey, err := kubeletServing.write(l.pki, "kubelet-serving")
	if err != nil {
		return files{}, err
	}
	apiToKubelet, err := authority.issue("kube-apiserver-kubelet-client", []string{"system:masters"}, nil)
	if err != nil {
		return files{}, err
	}
	clientCert, clientKey, err := apiToKubelet.write(l.pki, "apiserver-kubelet-client")
	if err != nil {
		return files{}, err
	}
	saKey, saPub, err := serviceAccountKey(l.pki)
	if err != nil {
		return files{}, err
	}
	users := map[string]struct {
		cn     string
		groups []string
	}{
		"kubeconfig":                     {"ragcanary-admin", []string{"system:masters"}},
		"pki/kube-controller-manager.kc": {"system:kube-controller-manager", nil},
		"pki/kube-scheduler.kc":          {"system:kube-scheduler", nil},
		"pki/kubelet.kc":                 {"system:node:" + c.opts.NodeName, []string{"system:nodes"}},
		"pki/kube-proxy.kc":              {"system:kube-proxy", nil},
		"pki/coredns.kc":                 {"ragcanary:coredns", nil},
	}
	out := map[string][]byte{}
	for rel, u := range users {
		p, err := authority.issue(u.cn, u.groups, nil)
		if err != nil {
			return files{}, err
		}
		out[filepath.Join(l.dir, rel)] = kubeconfig(c.Server, authority.pem, p)
	}
	kc := func(name string) string { return filepath.Join(l.pki, name+".kc") }
	cni, err := cniConfig(n, l.cniIPAM)
	if err != nil {
		return files{}, err
	}
	runc, err := exec.LookPath("runc")
	if err != nil {
		return files{}, err
	}
	containerdConf := filepath.Join(l.dir, "containerd", "config.toml")
	kubeletConf := filepath.Join(l.dir, "kubelet.yaml")
	proxyConf := filepath.Join(l.dir, "kube-proxy.yaml")
	corefilePath := filepath.Join(l.dir, "Corefile")
	out[containerdConf] = []byte(containerdConfig(l, c.opts.BinDir, runc, c.opts.PauseImage))
	out[filepath.Join(l.registryConfig, "_default", "hosts.toml")] = []byte(registryTrap)
	out[filepath.Join(l.cniConf, "10-ragcanary.conflist")] = cni
	out[kubeletConf] = []byte(kubeletConfig(l, n, c.cgroups, kubeletCert, kubeletKey))
	out[proxyConf] = []byte(kubeProxyConfig(n, kc("kube-proxy"), c.opts.NodeName))
	out[corefilePath] = []byte(corefile(n, kc("coredns")))
	// No upstream resolver: a Pod's resolv.conf names CoreDNS only.
	out[l.resolvConf] = []byte("")
	if err := writeFiles(out); err != nil {
		return files{}, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	return files{
		etcdArgs: []string{"--data-dir=" + l.etcdData, "--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
			"--listen-peer-urls=http://127.0.0.1:" + strconv.Itoa(etcdPeerPort), "--initial-advertise-peer-urls=http://127.0.0.1:" + strconv.Itoa(etcdPeerPort),
			"--initial-cluster=default=http://127.0.0.1:" + strconv.Itoa(etcdPeerPort), "--unsafe-no-fsync", "--listen-metrics-urls="},
		apiserverArgs: []string{"--etcd-servers=" + etcdURL, "--bind-address=" + nodeIP, "--advertise-address=" + nodeIP,
			"--secure-port=" + strconv.Itoa(apiServerPort), "--tls-cert-file=" + apiCert, "--tls-private-key-file=" + apiKey,
			"--client-ca-file=" + l.caFile, "--service-cluster-ip-range=" + n.ServiceCIDR.String(),
			"--service-account-issuer=https://kubernetes.default.svc." + ClusterDomain, "--service-account-key-file=" + saPub,
			"--service-account-signing-key-file=" + saKey, "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
			"--kubelet-client-certificate=" + clientCert, "--kubelet-client-key=" + clientKey, "--kubelet-certificate-authority=" + l.caFile,
			"--kubelet-preferred-address-types=InternalIP", "--profiling=false", "--cert-dir=" + l.pki, "--allow-privileged=false"},
		kcmArgs: []string{"--kubeconfig=" + kc("kube-controller-manager"), "--authentication-kubeconfig=" + kc("kube-controller-manager"),
			"--authorization-kubeconfig=" + kc("kube-controller-manager"), "--bind-address=127.0.0.1", "--secure-port=10257",
			"--service-account-private-key-file=" + saKey, "--root-ca-file=" + l.caFile, "--use-service-account-credentials=true",
			"--leader-elect=false", "--controllers=*,-bootstrapsigner,-tokencleaner", "--profiling=false", "--cert-dir=" + filepath.Join(l.pki, "kcm")},
		schedulerArgs: []string{"--kubeconfig=" + kc("kube-scheduler"), "--authentication-kubeconfig=" + kc("kube-scheduler"),
			"--authorization-kubeconfig=" + kc("kube-scheduler"), "--bind-address=127.0.0.1", "--secure-port=10259", "--leader-elect=false",
			"--profiling=false", "--cert-dir=" + filepath.Join(l.pki, "scheduler")},
		kubeletArgs: []string{"--config=" + kubeletConf, "--kubeconfig=" + kc("kubelet"), "--root-dir=" + l.kubeletRoot,
			"--cert-dir=" + filepath.Join(l.pki, "kubelet"), "--hostname-override=" + c.opts.NodeName, "--node-ip=" + nodeIP},
		proxyArgs:        []string{"--config=" + proxyConf},
		corednsArgs:      []string{"-conf=" + corefilePath},
		containerdConfig: containerdConf,
	}, nil
}

// startControlPlane starts etcd, the API server, kube-controller-manager
// and kube-scheduler, and waits until the API server is ready.
func (c *Cluster) startControlPlane(ctx context.Context, f files) error {
	bin := func(name string) string { return filepath.Join(c.opts.BinDir, name) }
	if _, err := c.spawn("etcd", bin("etcd"), f.etcdArgs, []string{"ETCD_UNSUPPORTED_ARCH="}); err != nil {
		return err
	}
	apiserver, err := c.spawn("kube-apiserver", bin("kube-apiserver"), f.apiserverArgs, nil)
	if err != nil {
		return err
	}
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	if err := poll(ctx, apiServerReadyTimeout, apiserver, func(ctx context.Context) error {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("%w: %s", err, body)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("kube-apiserver not ready: %w (log: %s)", err, apiserver.log)
	}
	if _, err := c.spawn("kube-controller-manager", bin("kube-controller-manager"), f.kcmArgs, nil); err != nil {
		return err
	}
	_, err = c.spawn("kube-scheduler", bin("kube-scheduler"), f.schedulerArgs, nil)
	return err
}

// startRuntime starts containerd and imports the images.
func (c *Cluster) startRuntime(ctx context.Context) error {
	p, err := c.spawn("containerd", filepath.Join(c.opts.BinDir, "containerd"), []string{"--config=" + filepath.Join(c.l.dir, "containerd", "config.toml")}, nil)
	if err != nil {
		return err
	}
	if err := poll(ctx, runtimeReadyTimeout, p, func(ctx context.Context) error {
		_, err := c.Ctr(ctx, "version")
		return err
	}); err != nil {
		return fmt.Errorf("containerd not ready: %w (log: %s)", err, p.log)
	}
	for _, archive := range c.opts.Images {
		if err := c.ImportImage(ctx, archive); err != nil {
			return err
		}
	}
	if err := c.pinDigests(ctx); err != nil {
		return err
	}
	names, err := c.Images(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		if name == dockerName(c.opts.PauseImage) {
			return nil
		}
	}
	return fmt.Errorf("the pause image %s is not among the imported images %v: build it with 'make cluster-images'", c.opts.PauseImage, names)
}

// startNode starts the kubelet, kube-proxy and CoreDNS (with the RBAC it
// reads through).
func (c *Cluster) startNode(ctx context.Context, f files) error {
	bin := func(name string) string { return filepath.Join(c.opts.BinDir, name) }
	if _, err := c.spawn("kubelet", bin("kubelet"), f.kubeletArgs, nil); err != nil {
		return err
	}
	if _, err := c.spawn("kube-proxy", bin("kube-proxy"), f.proxyArgs, nil); err != nil {
		return err
	}
	if err := c.Apply(ctx, []byte(coreDNSRBAC)); err != nil {
		return err
	}
	_, err := c.spawn("coredns", bin("coredns"), f.corednsArgs, nil)
	return err
}

// WaitReady waits until the node is Ready, kube-proxy and CoreDNS answer
// their health checks and the default ServiceAccount exists (a Pod can be
// admitted).
func (c *Cluster) WaitReady(ctx context.Context) error {
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	for _, name := range []string{"kubelet", "kube-proxy", "coredns", "kube-controller-manager", "kube-scheduler"} {
		if p := c.procs[name]; p != nil && p.exited() {
			return fmt.Errorf("%s exited (log: %s)", name, p.log)
		}
	}
	hc := &http.Client{Timeout: 3 * time.Second}
	check := func(ctx context.Context) error {
		node, err := cs.CoreV1().Nodes().Get(ctx, c.opts.NodeName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("node: %w", err)
		}
		if !nodeReady(node) {
			return fmt.Errorf("node %s not Ready", node.Name)
		}
		for _, u := range []string{
			fmt.Sprintf("http://%s/healthz", net.JoinHostPort(c.Network.NodeIP.String(), strconv.Itoa(kubeProxyHealthPort))),
			fmt.Sprintf("http://%s/ready", net.JoinHostPort(c.Network.NodeIP.String(), strconv.Itoa(coreDNSReadyPort))),
		} {
			if err := get(ctx, hc, u); err != nil {
				return err
			}
		}
		if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return fmt.Errorf("default service account: %w", err)
		}
		return nil
	}
	if err := poll(ctx, NodeReadyTimeout, c.procs["kubelet"], check); err != nil {
		return fmt.Errorf("cluster not ready: %w (logs in %s)", err, c.l.logs)
	}
	if c.Ready.IsZero() {
		c.Ready = time.Now()
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func get(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d", url, resp.StatusCode)
	}
	return nil
}

// poll calls check until it succeeds, p exits, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, p *process, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		if p != nil && p.exited() {
			return fmt.Errorf("%s exited: %v", p.name, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s: %v", timeout, last)
		case <-tick.C:
		}
	}
}

// RESTConfig reaches the API server as cluster admin.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
}

func (c *Cluster) clientset() (*kubernetes.Clientset, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// Apply creates (or leaves as they are) the objects of a multi-document
// YAML manifest.
func (c *Cluster) Apply(ctx context.Context, manifest []byte) error {
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	dec := yaml.NewYAMLOrJSONDecoder(bytesReader(manifest), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, errEOF) {
				return nil
			}
			return err
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := cl.Create(ctx, &u); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
}
