package rest

import (
	"github.com/ragcanary/ragcanary/internal/safetemplate"
)

// Templates are parsed and run by the one hardened engine every tenant
// template goes through (internal/safetemplate): named values only, no
// variables, assignments, with, range or template, bounded function
// results and output.

// parseTemplate parses text as field's template; sample names every value
// it may read (the named values, .Values.<name> for each static value,
// .Captured.<name> for each name some request captures).
func parseTemplate(field, text string, sample *named) (*safetemplate.Template, error) {
	return safetemplate.Parse(field, text, sample.values())
}

// values are d as the engine reads them.
func (d *named) values() safetemplate.Values {
	return safetemplate.Values{
		"DocumentID": d.DocumentID, "Title": d.Title, "Body": d.Body, "Subject": d.Subject,
		"Group": d.Group, "Principal": d.Principal, "Run": d.Run,
		"Values": orEmpty(d.Values), "Captured": orEmpty(d.Captured),
	}
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
