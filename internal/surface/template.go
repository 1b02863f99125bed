package surface

import (
	"errors"

	"github.com/ragcanary/ragcanary/internal/safetemplate"
)

// templateData is all a request template sees. It has no credential field,
// so no template can put the persona's token anywhere: the token goes only
// into its header, set after rendering.
type templateData struct {
	Query string
	K     int
}

// values names the data for the template engine: {{.Query}} and {{.K}}.
func (d templateData) values() safetemplate.Values {
	return safetemplate.Values{"Query": d.Query, "K": d.K}
}

// sampleData renders each template once at construction, so a template that
// fails to execute, or a body that stops being JSON when the query holds a
// quote, a backslash or a newline, is refused before any probe runs.
var sampleData = templateData{Query: "probe \"quoted\" \\ back\nslash </script>", K: 5}

// parseTemplate parses a request template with the hardened engine
// (package safetemplate: named values only, no variables or with, every
// function's result and the output bounded) and checks it renders.
func parseTemplate(field, text string) (*safetemplate.Template, error) {
	t, err := safetemplate.Parse(field, text, sampleData.values())
	if err != nil {
		var e *safetemplate.Error
		if errors.As(err, &e) {
			return nil, configError(field, e.Problem)
		}
		return nil, configError(field, "template refused")
	}
	return t, nil
}

// render executes t within the engine's bounds.
func render(t *safetemplate.Template, data templateData) (string, error) {
	return t.Render(data.values())
}
