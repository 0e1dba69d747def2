package report

import (
	"reflect"

	"github.com/flowerrun/flower/internal/screen"
)

// forPage is a copy of r whose every string has gone through the one
// sanitizer (screen.SanitizeLines): escape sequences, C0 and C1 controls
// and the bidirectional controls are dropped, newlines kept. Nearly every
// text of a report came from outside flower (a model's words, a tool's
// command, a file's name, the person's answer); HTML escaping keeps them
// from becoming markup, but a browser still draws a control as a box and
// obeys a right-to-left override, which can make TXT.EXE read EXE.TXT.
// Cleaning every string, not a list of fields, keeps a field added later
// from slipping past; flower's own texts hold no control, so they are
// unchanged. r itself is left as it is (--json prints the data as read).
func forPage(r *Report) *Report {
	c := cleanCopy(reflect.ValueOf(r).Elem())
	out := c.Interface().(Report)
	return &out
}

// cleanCopy returns a copy of v with every string reachable through
// exported struct fields, slices, arrays, maps and pointers sanitized.
// Slices, maps and pointers are copied, never written through, so the
// original shares nothing that changed.
func cleanCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		out := reflect.New(v.Type()).Elem()
		out.SetString(screen.SanitizeLines(v.String()))
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v) // the unexported fields (and time.Time) as they are
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out.Field(i).Set(cleanCopy(v.Field(i)))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(cleanCopy(v.Index(i)))
		}
		return out
	case reflect.Array:
		out := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			out.Index(i).Set(cleanCopy(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(cleanCopy(it.Key()), cleanCopy(it.Value()))
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(cleanCopy(v.Elem()))
		return out
	}
	return v
}
