package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
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
// A Bash output over 30,000 characters reaches PostToolUse already cut by
// the CLI (2.1.332), which saved the whole in its own file and names it in
// persistedOutputPath: the guard then spills the whole, copied from that
// file, so the pointer names all of the output and its length and preview
// are the whole's. When the whole cannot be read or written, the part that
// was seen is spilled with Texts.SpillPartial, which says so (see
// shrinkPersisted); the warning is logged and the pointer, the model's
// result, reaches the run's events as the tool result's text.
//
// A call whose input mentions the spill folder (reading a spill file back)
// is never spilled: that would loop forever. With mainOnly, subagents'
// results pass unchanged. Whatever goes wrong (unreadable input or result,
// an unexpected shape, an unwritable workbench) leaves the result unchanged
// and is logged. A threshold of zero or less spills nothing, the meaning
// it has everywhere in flower (WorkbenchHooks, BuildConfig, the Runtime);
// DefaultSpillThreshold is the usual one.
func (t Texts) Spill(wb *workbench.Workbench, threshold int, tools string, mainOnly bool) claude.HookMatcher {
	if tools == "" {
		tools = Bulky
	}
	return claude.HookMatcher{Matcher: tools, Hooks: []claude.HookFunc{t.newSpiller(wb, threshold, mainOnly).hook}}
}

func (t Texts) newSpiller(wb *workbench.Workbench, threshold int, mainOnly bool) *spiller {
	t = t.withDefaults()
	s := &spiller{wb: wb, threshold: threshold, mainOnly: mainOnly, pointer: t.SpillPointer,
		partial: t.SpillPartial, wholeAt: t.SpillWholeAt}
	if wb != nil {
		s.write = wb.Spill
	}
	return s
}

type spiller struct {
	wb        *workbench.Workbench
	threshold int
	mainOnly  bool
	pointer   string
	partial   string // Texts.SpillPartial
	wholeAt   string // Texts.SpillWholeAt
	// write spills a text and returns the file's path: the workbench's
	// Spill, replaced in tests by a writer that fails like a full disk.
	write func(string) (string, error)
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
	var out any
	var changed bool
	if m, ok := resp.(map[string]any); ok && persistedPath(m) != "" {
		out, changed, err = s.shrinkPersisted(m, in.MaskSecrets, log)
	} else {
		out, changed, err = s.shrink(resp)
	}
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
	path, err := s.write(text)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(s.pointer, utf8.RuneCountInString(text), s.wb.Show(path), preview(text)), nil
}

// preview is the start of a spilled text as the pointer shows it.
func preview(text string) string {
	head := text
	if utf8.RuneCountInString(head) > spillPreview {
		head = string([]rune(head)[:spillPreview])
	}
	return strings.ReplaceAll(head, "\n", " ")
}

// persistedPath is the file where the CLI saved the whole output of a
// result it cut (2.1.332 cuts a Bash stdout over 30,000 characters before
// PostToolUse runs and names its file in persistedOutputPath), or "".
func persistedPath(m map[string]any) string {
	p, _ := m["persistedOutputPath"].(string)
	if _, isText := m["stdout"].(string); !isText {
		return ""
	}
	return p
}

// shrinkPersisted spills a result the CLI cut: the whole output, copied
// from the CLI's file, so that the pointer names all of it and the preview
// and the stated length describe all of it. The CLI's fields naming its
// file go: the pointer is the output now. When the whole cannot be had (the
// file is missing, unreadable, not this output, or cut at the CLI's own
// limit) or cannot be written (a full disk), what was seen is spilled and
// the pointer says it is partial; when not even that can be written, the
// error leaves the result as the CLI made it, whose own pointer names its
// whole file. The pointer never names a file that does not hold what it
// says.
func (s *spiller) shrinkPersisted(m map[string]any, mask func([]byte) []byte, log *slog.Logger) (any, bool, error) {
	seen := m["stdout"].(string)
	cliPath := persistedPath(m)
	size := persistedSize(m)
	whole, err := readWhole(cliPath, seen, size, mask)
	var pointer string
	if err == nil {
		path, werr := s.write(whole)
		if werr == nil {
			pointer = fmt.Sprintf(s.pointer, utf8.RuneCountInString(whole), s.wb.Show(path), preview(whole))
		} else {
			// The CLI's file is whole: the partial pointer names it.
			log.Warn("guard: spill: cannot copy the CLI's whole output; spilling what was seen, marked partial",
				"cli_file", cliPath, "err", werr)
			if pointer, err = s.stashPartial(seen, size, fmt.Sprintf(s.wholeAt, cliPath)); err != nil {
				return nil, false, fmt.Errorf("%w (and the whole output could not be copied: %w)", err, werr)
			}
		}
	} else {
		log.Warn("guard: spill: the CLI's whole output cannot be read; spilling what was seen, marked partial",
			"cli_file", cliPath, "err", err)
		if pointer, err = s.stashPartial(seen, size, ""); err != nil {
			return nil, false, err
		}
	}
	delete(m, "persistedOutputPath")
	delete(m, "persistedOutputSize")
	delete(m, "stdout")
	// The other fields (stderr…) are spilled as usual, the pointer not.
	if _, _, err := s.shrink(m); err != nil {
		return nil, false, err
	}
	m["stdout"] = pointer
	return m, true, nil
}

// stashPartial spills the part of an output that was seen and returns the
// pointer that says so: whole is the whole output's size in bytes (0 when
// unknown), wholeAt the clause naming where the whole is ("" when nowhere).
func (s *spiller) stashPartial(seen string, whole int64, wholeAt string) (string, error) {
	path, err := s.write(seen)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(s.partial, utf8.RuneCountInString(seen), whole, s.wb.Show(path), wholeAt, preview(seen)), nil
}

// persistedSize is the whole output's size in bytes as the CLI states it,
// 0 when it does not.
func persistedSize(m map[string]any) int64 {
	switch n := m["persistedOutputSize"].(type) {
	case json.Number:
		if v, err := n.Int64(); err == nil && v > 0 {
			return v
		}
	case float64:
		if n > 0 {
			return int64(n)
		}
	}
	return 0
}

// readWhole reads the CLI's file of a cut output and checks it is that
// output, whole: it begins with what the CLI showed (the CLI strips the
// trailing newline of what it shows, so that may differ) and holds the size
// the CLI stated. The CLI itself saves at most 64 MiB of an output: a file
// cut there is not whole either.
func readWhole(path, seen string, size int64, mask func([]byte) []byte) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("the CLI's output file %q is not an absolute path", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the CLI's output file: %w", err)
	}
	// Masked as what the CLI showed is: a credential in the output is
	// written to no spill.
	data = mask(data)
	if !strings.HasPrefix(string(data), strings.TrimRight(seen, "\n")) {
		return "", fmt.Errorf("the CLI's output file %s does not begin with the output it showed", path)
	}
	if size > 0 && int64(len(data)) < size {
		return "", fmt.Errorf("the CLI's output file %s holds %d of %d bytes", path, len(data), size)
	}
	return string(data), nil
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
