// Command ragcanary is the offline companion of the operator: it checks a RAG
// service against the driver contract (conformance) and scores exported
// evaluation results (eval) with the same engine the SuiteRun controller uses.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// Exit codes shared by every subcommand so CI can tell a failed check from a
// broken invocation.
const (
	exitOK      = 0
	exitFailed  = 1
	exitInvalid = 2
)

// subcommand runs with the arguments after its name and returns an exit code.
type subcommand struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// subcommands is filled by the init functions of the files that implement them.
var subcommands = map[string]subcommand{}

func register(name string, c subcommand) { subcommands[name] = c }

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitInvalid
		}
		return exitOK
	}
	c, ok := subcommands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "ragcanary: unknown command %q\n", args[0])
		usage(stderr)
		return exitInvalid
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: ragcanary <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, subcommands[n].summary)
	}
}
