package doc

import "strings"

// field is one section's key and content, in document order.
type field struct {
	key, body string
}

// missing returns the canonical names, in lang, of the fields without
// content.
func missing(l *layout, lang Lang, fields []field) []string {
	var out []string
	for _, f := range fields {
		if strings.TrimSpace(f.body) == "" {
			out = append(out, l.name(f.key, lang))
		}
	}
	return out
}

// writeSections appends "## name", a blank line, the body (or the
// placeholder) and a blank line per field.
func writeSections(sb *strings.Builder, l *layout, lang Lang, fields []field, placeholder string) {
	for _, f := range fields {
		body := strings.TrimSpace(f.body)
		if body == "" {
			body = placeholder
		}
		sb.WriteString("\n" + sectionMark(body) + " " + l.name(f.key, lang) + "\n\n" + body + "\n")
	}
}

// promptSections renders "## name\nbody" for each non-empty field, joined by
// blank lines.
func promptSections(l *layout, lang Lang, fields []field) string {
	var parts []string
	for _, f := range fields {
		if body := strings.TrimSpace(f.body); body != "" {
			parts = append(parts, "## "+l.name(f.key, lang)+"\n"+body)
		}
	}
	return strings.Join(parts, "\n\n")
}

// list renders items as "- item" lines.
func list(items []string) string {
	var sb strings.Builder
	for i, it := range items {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString("- " + it)
	}
	return sb.String()
}

// sectionMark is "##", or "#" when the body holds a level-2 heading (a
// subsection read under a level-1 section), which would otherwise end the
// section when the document is read back.
func sectionMark(body string) string {
	lines := strings.Split(body, "\n")
	fenced, _ := fenceMask(lines)
	for i, ln := range lines {
		if !fenced[i] && headingLevel(ln) == 2 {
			return "#"
		}
	}
	return "##"
}
