// Package safetemplate is the one template language a tenant's spec may use
// to build a request: a search surface's URL query values and JSON body
// today, a declarative REST driver's paths, query values, headers and
// bodies next. It is text/template cut down so that no template, however
// written, can make the shared operator spend more than a bounded amount of
// time and memory on one render:
//
//   - a template reads named values only (.Query, .K: a map of strings and
//     integers the caller defines); a name it does not know is refused at
//     parse, one missing at render is an error;
//   - variables, declarations, assignments and with (which re-binds dot)
//     are refused at parse: without them nothing a template computes can
//     be kept and fed back into itself, so no value grows by doubling;
//   - range, define, block and template are refused (loops and recursion),
//     and only a few functions are allowed;
//   - every function that builds a string (print, json, urlquery) checks the
//     size of its result before building it, against a budget of MaxBytes
//     shared by all the calls of one render;
//   - the output is bounded by MaxBytes too.
//
// It is a leaf package: it imports only the standard library and safetext.
package safetemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"unicode/utf8"

	"github.com/ragcanary/ragcanary/internal/safetext"
)

// MaxBytes bounds one render's output, and separately the bytes all of its
// function calls build together: far more than a request needs, far less
// than the operator should build for one.
const MaxBytes = 64 << 10

// MaxText bounds a template's own text.
const MaxText = 16 << 10

// maxLabel bounds a piece of the template quoted in an error.
const maxLabel = 200

// Values are the named values a template reads, each a string, an int, or
// a group of named strings (a map[string]string, read one name at a time
// as .Group.name, never whole).
type Values map[string]any

// Error is a refused or failed template, naming the field it came from.
// Problem never holds a value rendered into the template.
type Error struct {
	Field   string
	Problem string
}

func (e *Error) Error() string { return e.Field + ": " + e.Problem }

// ErrTooLarge is wrapped by a render whose output or function results would
// exceed MaxBytes.
var ErrTooLarge = fmt.Errorf("the template would build more than %d bytes", MaxBytes)

// Template is a parsed template. It is safe for concurrent use.
type Template struct {
	field string
	tmpl  *template.Template
	names []string
}

// Parse parses text as the template of field and renders it once with
// sample, which names every value the template may read. A refused
// construct, an unknown value or a failed sample render is an *Error
// naming field.
func Parse(field, text string, sample Values) (*Template, error) {
	if err := checkValues(sample); err != nil {
		return nil, &Error{Field: field, Problem: "sample: " + err.Error()}
	}
	if len(text) > MaxText {
		return nil, &Error{Field: field, Problem: fmt.Sprintf("the template is longer than %d bytes", MaxText)}
	}
	tmpl, err := template.New(field).Option("missingkey=error").Funcs(funcs(nil)).Parse(text)
	if err != nil {
		return nil, &Error{Field: field, Problem: "bad template: " + clean(err.Error())}
	}
	if len(tmpl.Templates()) > 1 {
		return nil, &Error{Field: field, Problem: "define and block are not allowed in a template"}
	}
	c := checker{known: sample}
	if err := c.node(tmpl.Root); err != nil {
		return nil, &Error{Field: field, Problem: err.Error()}
	}
	t := &Template{field: field, tmpl: tmpl, names: slices.Sorted(maps.Keys(sample))}
	if _, err := t.Render(sample); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, &Error{Field: field, Problem: "template does not render: " + e.Problem}
		}
		return nil, err
	}
	return t, nil
}

// Field is the field the template came from.
func (t *Template) Field() string { return t.field }

// Render executes the template with values. A value the template knows
// that is missing, a value that is neither a string nor an int, a function
// result or an output past MaxBytes is an *Error naming the field.
func (t *Template) Render(values Values) (string, error) {
	if err := checkValues(values); err != nil {
		return "", &Error{Field: t.field, Problem: err.Error()}
	}
	for _, name := range t.names {
		if _, ok := values[name]; !ok {
			return "", &Error{Field: t.field, Problem: "value ." + clean(name) + " is missing"}
		}
	}
	run, err := t.tmpl.Clone()
	if err != nil {
		return "", &Error{Field: t.field, Problem: "template could not be prepared"}
	}
	// Each render gets its own budget: the functions are bound to it.
	run.Funcs(funcs(&budget{left: MaxBytes}))
	var out boundedWriter
	if err := run.Execute(&out, map[string]any(values)); err != nil {
		if errors.Is(err, ErrTooLarge) {
			return "", &Error{Field: t.field, Problem: ErrTooLarge.Error()}
		}
		return "", &Error{Field: t.field, Problem: clean(err.Error())}
	}
	return out.String(), nil
}

func checkValues(v Values) error {
	for _, name := range slices.Sorted(maps.Keys(v)) {
		switch v[name].(type) {
		case string, int, map[string]string:
		default:
			return fmt.Errorf("value .%s is neither a string nor an int (nor a group of strings)", clean(name))
		}
	}
	return nil
}

func clean(s string) string { return safetext.Clean(s, maxLabel) }

// allowedFuncs are the functions a template may call: the three that build
// strings (bounded, below) and builtins that only compare or measure.
// printf can pad to any width, call invokes functions, index and slice
// reach into values; none is needed to fill a request.
var allowedFuncs = map[string]bool{
	"json": true, "urlquery": true, "print": true, "len": true,
	"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
	"and": true, "or": true, "not": true,
}

func allowedList() string { return strings.Join(slices.Sorted(maps.Keys(allowedFuncs)), ", ") }

// checker refuses, node by node, everything a request template does not
// need. Unknown node kinds are refused too, so a newer text/template never
// widens the language by itself.
type checker struct{ known Values }

func (c checker) node(n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		return c.list(n)
	case *parse.TextNode, *parse.CommentNode, *parse.StringNode, *parse.NumberNode, *parse.BoolNode, *parse.NilNode:
		return nil
	case *parse.ActionNode:
		return c.pipe(n.Pipe)
	case *parse.IfNode:
		return c.branch(&n.BranchNode)
	case *parse.PipeNode:
		return c.pipe(n)
	case *parse.CommandNode:
		return c.nodes(n.Args)
	case *parse.IdentifierNode:
		if !allowedFuncs[n.Ident] {
			return fmt.Errorf("function %s is not allowed in a template (allowed: %s)", clean(n.Ident), allowedList())
		}
		return nil
	case *parse.FieldNode:
		return c.field(n)
	case *parse.VariableNode:
		return fmt.Errorf("variables (%s) are not allowed in a template; write the value where it is used, e.g. {{json .Query}}", clean(n.String()))
	case *parse.WithNode:
		return errors.New("with is not allowed in a template (it re-binds dot); write the value where it is used, e.g. {{json .Query}}")
	case *parse.RangeNode:
		return errors.New("range is not allowed in a template")
	case *parse.TemplateNode:
		return errors.New("template is not allowed in a template")
	case *parse.DotNode:
		return fmt.Errorf("dot is not a value; name one (%s)", c.knownList())
	case *parse.ChainNode:
		return errors.New("fields of a result are not allowed in a template")
	default:
		return fmt.Errorf("%s is not allowed in a template", clean(n.String()))
	}
}

func (c checker) list(l *parse.ListNode) error {
	if l == nil {
		return nil
	}
	return c.nodes(l.Nodes)
}

func (c checker) nodes(ns []parse.Node) error {
	for _, n := range ns {
		if err := c.node(n); err != nil {
			return err
		}
	}
	return nil
}

func (c checker) pipe(p *parse.PipeNode) error {
	if p == nil {
		return nil
	}
	if len(p.Decl) > 0 {
		return fmt.Errorf("variables (%s) are not allowed in a template: no declaration or assignment; write the value where it is used, e.g. {{json .Query}}", clean(p.Decl[0].String()))
	}
	for _, cmd := range p.Cmds {
		if err := c.node(cmd); err != nil {
			return err
		}
	}
	return nil
}

func (c checker) branch(b *parse.BranchNode) error {
	if err := c.pipe(b.Pipe); err != nil {
		return err
	}
	if err := c.list(b.List); err != nil {
		return err
	}
	return c.list(b.ElseList)
}

// field admits .Name for a name the caller defines, and .Group.name for a
// name in a group, nothing deeper; a group is never read whole.
func (c checker) field(f *parse.FieldNode) error {
	if group, ok := c.known[f.Ident[0]].(map[string]string); ok {
		if len(f.Ident) != 2 {
			return fmt.Errorf("%s is a group of values: read one of them, as .%s.name", clean(f.String()), clean(f.Ident[0]))
		}
		if _, ok := group[f.Ident[1]]; !ok {
			return fmt.Errorf("unknown value %s", clean(f.String()))
		}
		return nil
	}
	if len(f.Ident) != 1 {
		return fmt.Errorf("%s: only a named value (%s) may be read, not a field of it", clean(f.String()), c.knownList())
	}
	if _, ok := c.known[f.Ident[0]]; !ok {
		return fmt.Errorf("unknown value %s (the values are %s)", clean(f.String()), c.knownList())
	}
	return nil
}

func (c checker) knownList() string {
	names := slices.Sorted(maps.Keys(c.known))
	for i, n := range names {
		names[i] = "." + n
	}
	return strings.Join(names, ", ")
}

// boundedWriter fails a write past MaxBytes, which stops Execute.
type boundedWriter struct{ strings.Builder }

func (w *boundedWriter) Write(p []byte) (int, error) {
	if w.Len()+len(p) > MaxBytes {
		return 0, ErrTooLarge
	}
	return w.Builder.Write(p)
}

// budget is what the string-building functions of one render may still
// build, together. A nil budget (parse only) builds nothing.
type budget struct{ left int }

// take reserves n bytes before they are built.
func (b *budget) take(fn string, n int) error {
	if b == nil || n > b.left {
		return fmt.Errorf("%s: %w", fn, ErrTooLarge)
	}
	b.left -= n
	return nil
}

// funcs are the string-building functions, bound to b. They replace the
// builtins of the same names, whose results are unbounded.
func funcs(b *budget) template.FuncMap {
	return template.FuncMap{
		"print":    b.print,
		"json":     b.json,
		"urlquery": b.urlquery,
	}
}

func (b *budget) print(args ...any) (string, error) {
	return b.sprint("print", args)
}

// sprint is fmt.Sprint of args, its size counted first.
func (b *budget) sprint(fn string, args []any) (string, error) {
	n := 0
	for i, a := range args {
		s, ok := a.(string)
		if !ok {
			f, err := scalar(fn, a)
			if err != nil {
				return "", err
			}
			s = f
		}
		n += len(s)
		if i > 0 {
			n++ // fmt.Sprint's space between two operands that are not strings
		}
	}
	if err := b.take(fn, n); err != nil {
		return "", err
	}
	return fmt.Sprint(args...), nil
}

// scalar formats a value that is not a string; only small ones exist in a
// template (named ints, constants, lengths, comparisons).
func scalar(fn string, a any) (string, error) {
	switch a := a.(type) {
	case int:
		return strconv.Itoa(a), nil
	case bool:
		return strconv.FormatBool(a), nil
	case int64, uint64, float64, complex128:
		return fmt.Sprint(a), nil
	default:
		return "", fmt.Errorf("%s takes strings and numbers, not %T", fn, a)
	}
}

// json encodes a string or a scalar as JSON; a string's encoded size is
// counted before it is encoded.
func (b *budget) json(v any) (string, error) {
	n := 0
	if s, ok := v.(string); ok {
		n = jsonStringSize(s)
	} else {
		f, err := scalar("json", v)
		if err != nil {
			return "", err
		}
		n = len(f)
	}
	if err := b.take("json", n); err != nil {
		return "", err
	}
	out, err := json.Marshal(v)
	return string(out), err
}

// jsonStringSize is the length of s as encoding/json writes it: quoted,
// with <, > and & escaped for HTML. It never undercounts.
func jsonStringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += w
		}
		i += w
	}
	return n
}

// urlquery is url.QueryEscape of fmt.Sprint of args, each size counted
// before it is built.
func (b *budget) urlquery(args ...any) (string, error) {
	s, ok := "", false
	if len(args) == 1 {
		s, ok = args[0].(string)
	}
	if !ok {
		var err error
		if s, err = b.sprint("urlquery", args); err != nil {
			return "", err
		}
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ' ' || unreserved(c) {
			n++
		} else {
			n += 3
		}
	}
	if err := b.take("urlquery", n); err != nil {
		return "", err
	}
	return url.QueryEscape(s), nil
}

func unreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~'
}
