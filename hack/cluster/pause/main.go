// Command pause is the one-node cluster's Pod sandbox program: it holds a
// Pod's namespaces open, reaps orphans (it is PID 1 of a Pod sharing its
// process namespace) and exits on SIGINT or SIGTERM. Built here, so no
// pause image is ever pulled.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
