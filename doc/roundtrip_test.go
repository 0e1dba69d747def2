package doc

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var langs = []Lang{Chinese, English}

// awkward is a body that exercises the parser: several paragraphs, a list,
// a line starting with another section's name but no colon, markdown
// emphasis and a quote.
const awkward = "第一段 **重点**\n\n- 条目一\n- 条目二\n\n下一步是跑测试\nNext step is to run tests\n> 引用"

func TestCompleteDocumentsSurviveMarkdownInEveryLanguage(t *testing.T) {
	for _, lang := range langs {
		t.Run(string(lang), func(t *testing.T) {
			b := &Brief{Goal: awkward, Accept: "a", Bounds: "b", Unknowns: awkward}
			if got := ParseBrief(b.ToMarkdown(lang)); !reflect.DeepEqual(got, b) {
				t.Errorf("brief:\n got %+v\nwant %+v", got, b)
			}
			h := &Handoff{Doing: awkward, Decided: "c", Deadends: "(暂无)", Next: "n", Scene: "doc/", Step: "干活#round2"}
			if got := ParseHandoff(h.ToMarkdown(lang)); !reflect.DeepEqual(got, h) {
				t.Errorf("handoff:\n got %+v\nwant %+v", got, h)
			}
			g := &Goal{Statement: awkward, Checks: []string{"go test ./... 通过", "- nested", "1. numbered", UnverifiableMarker(lang, "x")}}
			if got := ParseGoal(g.ToMarkdown(lang)); !reflect.DeepEqual(got, g) {
				t.Errorf("goal:\n got %+v\nwant %+v", got, g)
			}
			for _, s := range []State{Achieved, NotYet, Unreachable} {
				v := &Verdict{State: s, Reason: awkward + "\n已达成 achieved yes 1", Failed: []string{"a", "b"}}
				if got := ParseVerdict(v.ToMarkdown(lang)); !reflect.DeepEqual(got, v) {
					t.Errorf("verdict:\n got %+v\nwant %+v", got, v)
				}
			}
		})
	}
}

func TestIncompleteDocumentsStayIncompleteThroughMarkdown(t *testing.T) {
	for _, lang := range langs {
		if b := ParseBrief((&Brief{Goal: "g"}).ToMarkdown(lang)); !reflect.DeepEqual(b, &Brief{Goal: "g"}) {
			t.Errorf("%s brief: got %+v", lang, b)
		}
		if h := ParseHandoff((&Handoff{Next: "n"}).ToMarkdown(lang)); !reflect.DeepEqual(h, &Handoff{Next: "n"}) {
			t.Errorf("%s handoff: got %+v", lang, h)
		}
		if g := ParseGoal((&Goal{}).ToMarkdown(lang)); g.Statement != "" || len(g.Checks) != 0 {
			t.Errorf("%s goal: got %+v", lang, g)
		}
		if v := ParseVerdict((&Verdict{Reason: "achieved"}).ToMarkdown(lang)); v.Ok() || v.Reason != "achieved" {
			t.Errorf("%s verdict without a state read one back: %+v", lang, v)
		}
	}
}

func TestWriteThenLoadGivesTheSameDocument(t *testing.T) {
	for _, lang := range langs {
		t.Run(string(lang), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "notes", "deeper")
			b := &Brief{Goal: "g", Accept: "a", Bounds: "b", Unknowns: "u"}
			h := &Handoff{Doing: "d", Next: "n", Step: "s"}
			g := &Goal{Statement: "s", Checks: []string{"c"}}
			v := &Verdict{State: Unreachable, Reason: "r"}
			check := func(name string, write func(string) error, load func(string) (any, error), path *string, want any) {
				p := filepath.Join(dir, name)
				if err := write(p); err != nil {
					t.Fatalf("Write %s: %v", name, err)
				}
				if *path != p || !filepath.IsAbs(*path) {
					t.Errorf("Write set Path %q, want %q", *path, p)
				}
				got, err := load(p)
				if err != nil {
					t.Fatalf("Load %s: %v", name, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("Load %s:\n got %+v\nwant %+v", name, got, want)
				}
				info, err := os.Stat(p)
				if err != nil || info.Mode().Perm() != 0o644 {
					t.Errorf("%s: mode %v, err %v; want 0644", name, info.Mode(), err)
				}
			}
			check("brief.md", func(p string) error { return b.Write(lang, p) },
				func(p string) (any, error) { return LoadBrief(p) }, &b.Path, b)
			check("handoff.md", func(p string) error { return h.Write(lang, p) },
				func(p string) (any, error) { return LoadHandoff(p) }, &h.Path, h)
			check("goal.md", func(p string) error { return g.Write(lang, p) },
				func(p string) (any, error) { return LoadGoal(p) }, &g.Path, g)
			check("verdict.md", func(p string) error { return v.Write(lang, p) },
				func(p string) (any, error) { return LoadVerdict(p) }, &v.Path, v)
			entries, _ := os.ReadDir(dir)
			if len(entries) != 4 {
				t.Errorf("Write left %d files behind, want 4", len(entries))
			}
		})
	}
}

func TestLoadingABriefMapsThePlaceholderToEmpty(t *testing.T) {
	p := filepath.Join(t.TempDir(), "需求.md")
	if err := (&Brief{Goal: "g"}).Write(Chinese, p); err != nil {
		t.Fatal(err)
	}
	b, err := LoadBrief(p)
	if err != nil {
		t.Fatal(err)
	}
	if b.Goal != "g" || b.Accept != "" || b.Bounds != "" || b.Unknowns != "" {
		t.Errorf("LoadBrief = %+v, want (未填) read as empty", b)
	}
}

func TestLoadingAnAbsentFileIsErrNotExist(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.md")
	loads := map[string]func(string) error{
		"brief":   func(p string) error { d, err := LoadBrief(p); return nilDoc(d == nil, err) },
		"handoff": func(p string) error { d, err := LoadHandoff(p); return nilDoc(d == nil, err) },
		"goal":    func(p string) error { d, err := LoadGoal(p); return nilDoc(d == nil, err) },
		"verdict": func(p string) error { d, err := LoadVerdict(p); return nilDoc(d == nil, err) },
	}
	for name, load := range loads {
		err := load(p)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: Load of an absent file = %v, want fs.ErrNotExist", name, err)
		}
		if err != nil && !strings.Contains(err.Error(), "nope.md") {
			t.Errorf("%s: error %q does not name the file", name, err)
		}
	}
	if _, err := LoadBrief(t.TempDir()); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a directory = %v, want an error that is not ErrNotExist", err)
	}
}

// nilDoc passes err through, or reports a document returned with an error.
func nilDoc(isNil bool, err error) error {
	if err != nil && !isNil {
		return errors.New("a document came back with an error")
	}
	return err
}

func TestWriteFailsWhenTheDirectoryCannotBeMade(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b := &Brief{Goal: "g"}
	if err := b.Write(Chinese, filepath.Join(file, "brief.md")); err == nil {
		t.Error("Write under a regular file succeeded")
	}
	if b.Path != "" {
		t.Errorf("a failed Write set Path to %q", b.Path)
	}
}
