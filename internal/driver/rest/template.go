package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
)

// renderer is one parsed request template. Templates are parsed and run by
// the one hardened engine the surfaces use; parseTemplate is the only
// place this package reaches it.
type renderer interface {
	render(data any) (string, error)
}

// maxRendered bounds one rendered template.
const maxRendered = 64 << 10

// parseTemplate parses text with the hardened engine: no variables,
// assignments, with, range or template; only json, urlquery, print, len
// and comparisons; bounded output.
// TODO(safetemplate): replace with the leaf package once it lands.
func parseTemplate(field, text string) (renderer, error) {
	t, err := template.New(field).Option("missingkey=error").Funcs(template.FuncMap{"json": jsonValue}).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%s: bad template", field)
	}
	if len(t.Templates()) > 1 {
		return nil, fmt.Errorf("%s: define and block are not allowed", field)
	}
	if err := checkNode(t.Root); err != nil {
		return nil, fmt.Errorf("%s: %v", field, err)
	}
	return textTemplate{t}, nil
}

type textTemplate struct{ t *template.Template }

func (t textTemplate) render(data any) (string, error) {
	var b boundedBuilder
	if err := t.t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

func jsonValue(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

var allowedFuncs = map[string]bool{
	"json": true, "urlquery": true, "print": true, "len": true,
	"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
	"and": true, "or": true, "not": true,
}

func checkNode(n parse.Node) error {
	switch n := n.(type) {
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
		for _, c := range []parse.Node{n.Pipe, n.List, n.ElseList} {
			if err := checkNode(c); err != nil {
				return err
			}
		}
	case *parse.PipeNode:
		if n == nil {
			return nil
		}
		if len(n.Decl) > 0 || n.IsAssign {
			return errors.New("variables are not allowed")
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
	case *parse.VariableNode:
		return errors.New("variables are not allowed")
	case *parse.WithNode, *parse.RangeNode, *parse.TemplateNode, *parse.BreakNode, *parse.ContinueNode:
		return fmt.Errorf("%s is not allowed", strings.Fields(n.String())[0])
	case *parse.IdentifierNode:
		if !allowedFuncs[n.Ident] {
			return fmt.Errorf("function %q is not allowed", n.Ident)
		}
	}
	return nil
}

type boundedBuilder struct{ strings.Builder }

func (b *boundedBuilder) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxRendered {
		return 0, fmt.Errorf("rendered template exceeds %d bytes", maxRendered)
	}
	return b.Builder.Write(p)
}
