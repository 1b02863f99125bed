package surface

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
)

// templateData is all a request template sees. It has no credential field,
// so no template can put the persona's token anywhere: the token goes only
// into its header, set after rendering.
type templateData struct {
	Query string
	K     int
}

// sampleData renders each template once at construction, so a template that
// fails to execute, or a body that stops being JSON when the query holds a
// quote, a backslash or a newline, is refused before any probe runs.
var sampleData = templateData{Query: "probe \"quoted\" \\ back\nslash </script>", K: 5}

// maxRendered bounds one rendered template: far more than a search request
// needs, far less than an operator should build for one probe.
const maxRendered = 64 << 10

// templateFuncs is the only function added to the template language: json
// encodes a value (a query becomes a quoted, escaped JSON string, so no
// query can end the string it sits in).
var templateFuncs = template.FuncMap{"json": jsonValue}

func jsonValue(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// allowedFuncs are the functions a template may call. The rest of
// text/template's builtins are refused: printf can pad to any width and
// call invokes functions, and neither is needed to fill a request.
var allowedFuncs = map[string]bool{
	"json": true, "urlquery": true, "print": true, "len": true,
	"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
	"and": true, "or": true, "not": true,
}

// parseTemplate parses a request template and checks it renders. text/template
// reads neither files nor the environment, and with range and
// define/template refused (an integer range or a recursive template could
// spin the operator's CPU) every template runs in time bounded by its size.
func parseTemplate(field, text string) (*template.Template, error) {
	t, err := template.New(field).Option("missingkey=error").Funcs(templateFuncs).Parse(text)
	if err != nil {
		return nil, configError(field, "bad template: "+templateProblem(err))
	}
	if len(t.Templates()) > 1 {
		return nil, configError(field, "define and block are not allowed in a request template")
	}
	if err := checkNode(t.Root); err != nil {
		return nil, configError(field, err.Error())
	}
	if _, err := render(t, sampleData); err != nil {
		return nil, configError(field, "template does not render: "+templateProblem(err))
	}
	return t, nil
}

// templateProblem is a template error without the template's own text
// repeated; the template is config, but config ends up in a condition.
func templateProblem(err error) string {
	return label(err.Error())
}

// checkNode refuses what a request template never needs and could abuse.
func checkNode(n parse.Node) error {
	switch n := n.(type) {
	case nil:
		return nil
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := checkNode(c); err != nil {
				return err
			}
		}
	case *parse.ActionNode:
		return checkNode(n.Pipe)
	case *parse.IfNode:
		return checkBranch(&n.BranchNode)
	case *parse.WithNode:
		return checkBranch(&n.BranchNode)
	case *parse.RangeNode:
		return errors.New("range is not allowed in a request template")
	case *parse.TemplateNode:
		return errors.New("template is not allowed in a request template")
	case *parse.PipeNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Cmds {
			if err := checkNode(c); err != nil {
				return err
			}
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			if err := checkNode(a); err != nil {
				return err
			}
		}
	case *parse.ChainNode:
		return checkNode(n.Node)
	case *parse.IdentifierNode:
		if !allowedFuncs[n.Ident] {
			return fmt.Errorf("function %s is not allowed in a request template (allowed: %s)", label(n.Ident), allowedList())
		}
	}
	return nil
}

func checkBranch(b *parse.BranchNode) error {
	for _, n := range []parse.Node{b.Pipe, b.List, b.ElseList} {
		if err := checkNode(n); err != nil {
			return err
		}
	}
	return nil
}

func allowedList() string {
	return strings.Join(slices.Sorted(maps.Keys(allowedFuncs)), ", ")
}

// render executes t into a bounded buffer.
func render(t *template.Template, data templateData) (string, error) {
	var b boundedBuilder
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

var errRenderedTooLarge = fmt.Errorf("rendered template exceeds %d bytes", maxRendered)

// boundedBuilder fails a write past maxRendered, which stops Execute.
type boundedBuilder struct{ strings.Builder }

func (b *boundedBuilder) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxRendered {
		return 0, errRenderedTooLarge
	}
	return b.Builder.Write(p)
}
