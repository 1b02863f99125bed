package testutil

import "strings"

// DoublingTemplate is issue 37's hostile request template: a variable
// doubled n times, then a JSON body reading its length. With 40 doublings
// it is 861 bytes and, rendered, asks for terabytes.
func DoublingTemplate(n int) string {
	var b strings.Builder
	b.WriteString(`{{$x := print .Query}}`)
	for range n {
		b.WriteString(`{{$x = print $x $x}}`)
	}
	b.WriteString(`{"q": {{json .Query}}, "n": {{len $x}}}`)
	return b.String()
}

// WithChainTemplate doubles by re-binding dot through n withs instead of
// a variable.
func WithChainTemplate(n int) string {
	var b strings.Builder
	b.WriteString(`{{with print .Query}}`)
	for range n {
		b.WriteString(`{{with print . .}}`)
	}
	b.WriteString(`{"n": {{len .}}}`)
	for range n + 1 {
		b.WriteString(`{{end}}`)
	}
	return b.String()
}
