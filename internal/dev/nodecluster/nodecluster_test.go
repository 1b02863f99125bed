package nodecluster

import (
	"strings"
	"testing"
)

func TestNetworkLayout(t *testing.T) {
	n, err := NewNetwork("test", 210)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{n.Namespace, n.HostLink, n.HostIP.String(), n.NodeIP.String(), n.LinkCIDR(), n.PodCIDR.String(), n.Gateway.String(), n.ServiceCIDR.String(), n.APIServiceIP.String()}
	want := []string{"ragcanary-test", "rc-test", "10.210.0.1", "10.210.0.2", "10.210.0.0/30", "10.211.0.0/24", "10.211.0.1", "10.212.0.0/24", "10.212.0.1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("layout %v, want %v", got, want)
	}
	for _, bad := range []int{0, 251, -1} {
		if _, err := NewNetwork("x", bad); err == nil {
			t.Errorf("block %d accepted", bad)
		}
	}
}

func TestOptionsRefuseWhatWouldCollide(t *testing.T) {
	for _, o := range []Options{
		{ID: "", Dir: "/tmp/x", PauseImage: "p"},
		{ID: "toolongid", Dir: "/tmp/x", PauseImage: "p"},
		{ID: "Up", Dir: "/tmp/x", PauseImage: "p"},
		{ID: "ok", Dir: "relative", PauseImage: "p"},
		{ID: "ok", Dir: "/tmp/x"},
	} {
		if err := o.defaults(); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	o := Options{ID: "ok1", Dir: "/tmp/x", PauseImage: "p"}
	if err := o.defaults(); err != nil || o.NodeName != "node" {
		t.Errorf("valid options: %v, node %q", err, o.NodeName)
	}
}

func TestDockerName(t *testing.T) {
	for in, want := range map[string]string{
		"pause:1":                     "docker.io/library/pause:1",
		"ragcanary/manager:0.1.0":     "docker.io/ragcanary/manager:0.1.0",
		"ragcanary.local/pause:0.1.0": "ragcanary.local/pause:0.1.0",
		"localhost/x:1":               "localhost/x:1",
		"host:5000/x:1":               "host:5000/x:1",
	} {
		if got := dockerName(in); got != want {
			t.Errorf("dockerName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/tmp/a\040b/c`); got != "/tmp/a b/c" {
		t.Errorf("got %q", got)
	}
	if got := unescapeMount("/plain"); got != "/plain" {
		t.Errorf("got %q", got)
	}
}

// The Pods route only to the Services and the node's link, and nothing is
// masqueraded: no address outside the cluster is reachable from a Pod.
func TestCNIConfigHasNoWayOut(t *testing.T) {
	n, _ := NewNetwork("test", 210)
	conf, err := cniConfig(n, "/tmp/ipam")
	if err != nil {
		t.Fatal(err)
	}
	s := string(conf)
	for _, want := range []string{`"ipMasq": false`, `"dst": "10.212.0.0/24"`, `"dst": "10.210.0.0/30"`, `"subnet": "10.211.0.0/24"`} {
		if !strings.Contains(s, want) {
			t.Errorf("CNI configuration lacks %s:\n%s", want, s)
		}
	}
	if strings.Contains(s, "0.0.0.0/0") || strings.Contains(s, `"isDefaultGateway": true`) {
		t.Errorf("CNI configuration routes Pods out:\n%s", s)
	}
}
