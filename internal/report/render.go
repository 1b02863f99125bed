package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strings"
)

// Format is an output format of the report.
type Format string

// Formats.
const (
	FormatHTML     Format = "html"
	FormatJSON     Format = "json"
	FormatMarkdown Format = "md"
)

// ParseFormat reads a format name.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "html", "htm":
		return FormatHTML, nil
	case "json":
		return FormatJSON, nil
	case "md", "markdown":
		return FormatMarkdown, nil
	}
	return "", fmt.Errorf("unknown report format %q: use html, json or md", s)
}

// FormatForPath picks the format from a file name's extension.
func FormatForPath(path string) (Format, error) {
	ext := strings.TrimPrefix(filepath.Ext(path), ".")
	if ext == "" {
		return "", fmt.Errorf("cannot tell the format of %q: name it .html, .json or .md", path)
	}
	return ParseFormat(ext)
}

// Render writes the evidence in the format.
func Render(w io.Writer, ev Evidence, f Format) error {
	switch f {
	case FormatJSON:
		return renderJSON(w, ev)
	case FormatMarkdown:
		_, err := io.WriteString(w, renderMarkdown(documentOf(ev)))
		return err
	case FormatHTML:
		return renderHTML(w, documentOf(ev))
	}
	return fmt.Errorf("unknown report format %q", f)
}

func renderJSON(w io.Writer, ev Evidence) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// The report is a file, not a web page: keep "<", ">" and "&" readable.
	enc.SetEscapeHTML(false)
	return enc.Encode(ev)
}

// renderMarkdown writes the document as GitHub-flavoured Markdown.
func renderMarkdown(d document) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", mdText(d.Title))
	fmt.Fprintf(&b, "**Verdict: %s** · report generated %s\n", mdText(d.Verdict), d.Generated)
	for _, s := range d.Sections {
		fmt.Fprintf(&b, "\n## %s\n", mdText(s.Title))
		for _, bl := range s.Blocks {
			switch {
			case bl.Para != "":
				fmt.Fprintf(&b, "\n%s\n", mdText(bl.Para))
			case len(bl.Facts) > 0:
				b.WriteString("\n")
				for _, f := range bl.Facts {
					fmt.Fprintf(&b, "- **%s:** %s\n", mdText(f.Key), mdText(f.Value))
				}
			case bl.Table != nil:
				mdTable(&b, *bl.Table)
			}
		}
	}
	return b.String()
}

func mdTable(b *strings.Builder, t table) {
	fmt.Fprintf(b, "\n%s\n\n", mdText(t.Caption))
	row := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			fmt.Fprintf(b, " %s |", mdCell(c))
		}
		b.WriteString("\n")
	}
	row(t.Header)
	b.WriteString("|")
	for range t.Header {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		row(r)
	}
	if len(t.Rows) == 0 {
		fmt.Fprintf(b, "\n(no rows)\n")
	}
}

// mdText keeps a value on one line and stops it from starting markup.
func mdText(s string) string {
	s = strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "`", "\\`", "<", "&lt;").Replace(s)
}

func mdCell(s string) string { return strings.ReplaceAll(mdText(s), "|", `\|`) }

//go:embed report.html.tmpl
var htmlTemplate string

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	// Charts are built from escaped text by this package (chart.go).
	"svg": func(c chart) template.HTML { return template.HTML(c.svg()) },
}).Parse(htmlTemplate))

func renderHTML(w io.Writer, d document) error {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, d); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}
