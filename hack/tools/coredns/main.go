// Command coredns is CoreDNS with only the plugins the one-node cluster of
// make test-cluster uses: it answers cluster names from the API server and
// forwards nothing, so a Pod's lookup of an outside name fails fast instead of
// leaving the machine. Fewer plugins also keep the cold build short.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	coremain.Run()
}
