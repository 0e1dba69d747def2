package guard

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/workbench"
)

// Spill moves big tool results to disk: with the default texts it is
// ChineseTexts.Spill.
func Spill(wb *workbench.Workbench, threshold int, tools string, mainOnly bool) claude.HookMatcher {
	return Texts{}.Spill(wb, threshold, tools, mainOnly)
}

// Spill moves big tool results to disk the moment they arrive, instead of
// compacting a full context later. This PostToolUse guard, for the tools
// matched by tools ("" means Bulky), writes each string of the result longer
// than threshold characters to
// the workbench's spill/ folder (see Workbench.Spill) and puts in its place
// a pointer line and the string's first 400 characters.
//
// The result keeps its shape, or the CLI would reject it: a bare string is
// replaced; in an object only long string fields are replaced and nested
// objects are walked; lists are never touched (they may hold images); every
// other field stays as it was (Bash keeps stdout, stderr, interrupted…). It
// answers updatedToolOutput only when something changed.
//
// A call whose input mentions the spill folder (reading a spill file back)
// is never spilled: that would loop forever. With mainOnly, subagents'
// results pass unchanged. Whatever goes wrong (unreadable input or result,
// an unexpected shape, an unwritable workbench) leaves the result unchanged
// and is logged. A threshold of zero or less spills nothing, the meaning
// it has everywhere in flower (WorkbenchHooks, BuildConfig, the Runtime);
// DefaultSpillThreshold is the usual one.
func (t Texts) Spill(wb *workbench.Workbench, threshold int, tools string, mainOnly bool) claude.HookMatcher {
	t = t.withDefaults()
	if tools == "" {
		tools = Bulky
	}
	s := &spiller{wb: wb, threshold: threshold, mainOnly: mainOnly, pointer: t.SpillPointer}
	return claude.HookMatcher{Matcher: tools, Hooks: []claude.HookFunc{s.hook}}
}

type spiller struct {
	wb        *workbench.Workbench
	threshold int
	mainOnly  bool
	pointer   string
}

func (s *spiller) hook(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
	if in == nil || s.wb == nil || s.threshold <= 0 || ctx.Err() != nil || (s.mainOnly && !in.IsMainThread()) {
		return nil, nil
	}
	if len(bytes.TrimSpace(in.ToolResponse)) == 0 {
		return nil, nil
	}
	log := logger().With("tool", in.ToolName, "tool_use_id", in.ToolUseID)
	reading, err := s.readsSpill(in.ToolInput)
	if err != nil {
		log.Warn("guard: spill: tool input is not JSON, result left unchanged", "err", err)
		return nil, nil
	}
	if reading {
		return nil, nil
	}
	resp, err := decodeJSON(in.ToolResponse)
	if err != nil {
		log.Warn("guard: spill: tool response is not JSON, left unchanged", "err", err)
		return nil, nil
	}
	switch resp.(type) {
	case string, map[string]any:
	default:
		log.Debug("guard: spill: tool response is neither a string nor an object, left unchanged", "type", fmt.Sprintf("%T", resp))
		return nil, nil
	}
	out, changed, err := s.shrink(resp)
	if err != nil {
		log.Warn("guard: spill: cannot write the spill file, result left unchanged", "err", err)
		return nil, nil
	}
	if !changed {
		return nil, nil
	}
	raw, err := encodeJSON(out)
	if err != nil {
		log.Warn("guard: spill: cannot encode the new result, left unchanged", "err", err)
		return nil, nil
	}
	return &claude.HookOutput{HookSpecificOutput: &claude.HookSpecificOutput{
		HookEventName:     claude.PostToolUse,
		UpdatedToolOutput: raw,
	}}, nil
}

// shrink replaces the long strings of v, a bare string or an object, keeping
// its shape; it changes the objects of v in place.
func (s *spiller) shrink(v any) (any, bool, error) {
	switch x := v.(type) {
	case string:
		if utf8.RuneCountInString(x) <= s.threshold {
			return x, false, nil
		}
		p, err := s.stash(x)
		if err != nil {
			return nil, false, err
		}
		return p, true, nil
	case map[string]any:
		changed := false
		for k, field := range x {
			switch field.(type) {
			case string, map[string]any:
				nv, c, err := s.shrink(field)
				if err != nil {
					return nil, false, err
				}
				if c {
					x[k], changed = nv, true
				}
			}
		}
		return x, changed, nil
	}
	return v, false, nil
}

// stash writes text to the spill folder and returns the pointer that
// replaces it.
func (s *spiller) stash(text string) (string, error) {
	path, err := s.wb.Spill(text)
	if err != nil {
		return "", err
	}
	head := text
	if utf8.RuneCountInString(head) > spillPreview {
		head = string([]rune(head)[:spillPreview])
	}
	head = strings.ReplaceAll(head, "\n", " ")
	return fmt.Sprintf(s.pointer, utf8.RuneCountInString(text), s.wb.Show(path), head), nil
}

// readsSpill reports whether a string anywhere in the tool input mentions
// the spill folder, in any of the forms the model may use.
func (s *spiller) readsSpill(raw []byte) (bool, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return false, nil
	}
	input, err := decodeJSON(raw)
	if err != nil {
		return false, err
	}
	dir := s.wb.SpillDir()
	forms := []string{dir}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		forms = append(forms, real)
	}
	// Inside the workspace the pointer shows a relative path; a bare
	// "spill" would match too much, so only a path with a folder counts.
	if rel := s.wb.Show(dir); !filepath.IsAbs(rel) && strings.ContainsRune(rel, filepath.Separator) {
		forms = append(forms, rel)
	}
	return mentions(input, forms), nil
}

// mentions reports whether a string in v contains one of forms.
func mentions(v any, forms []string) bool {
	switch x := v.(type) {
	case string:
		for _, f := range forms {
			if strings.Contains(x, f) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if mentions(e, forms) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if mentions(e, forms) {
				return true
			}
		}
	}
	return false
}
