package cli

import (
	"fmt"
	"io"
	"reflect"

	"github.com/ragcanary/ragcanary/internal/safetext"
)

// Fprintf is how every line for people is written: the format is ours, and
// each string or error argument, which may come from an object (a run's
// message, a condition, a summary's name, a gate) and so from a target or
// whoever can write status, is quoted by safetext.Terminal when it holds
// anything a terminal would act on. A message with "\x1b[2J" then shows
// those characters instead of clearing the screen and printing a verdict
// of its own.
func Fprintf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, format, terminalArgs(args)...)
}

func terminalArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = terminalArg(a)
	}
	return out
}

// terminalArg quotes strings, named string types (verdicts, phases) and
// errors; numbers and everything else pass as they are.
func terminalArg(a any) any {
	if err, ok := a.(error); ok {
		return safetext.Terminal(err.Error())
	}
	if v := reflect.ValueOf(a); v.Kind() == reflect.String {
		return safetext.Terminal(v.String())
	}
	return a
}
