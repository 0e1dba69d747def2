package doc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The corpus in testdata/corpus holds documents in the styles models
// really write (bold headings, synonyms, hedges, code blocks, tables, extra
// sections; Chinese, English and Korean), one file per case, each beside a
// JSON file with the reading a careful person gives it. Every one must be
// read that way.

// corpusMinimum is how many cases of each kind the corpus must hold.
var corpusMinimum = map[string]int{"verdict": 60, "goal": 30, "brief": 20, "handoff": 20}

// corpusCase is one document and its expected reading, raw.
type corpusCase struct {
	name, text string
	want       []byte
}

func corpus(t *testing.T, kind string) []corpusCase {
	t.Helper()
	mds, err := filepath.Glob(filepath.Join("testdata", "corpus", kind, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(mds) < corpusMinimum[kind] {
		t.Fatalf("the %s corpus holds %d cases, want at least %d", kind, len(mds), corpusMinimum[kind])
	}
	var out []corpusCase
	for _, md := range mds {
		text, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(strings.TrimSuffix(md, ".md") + ".json")
		if err != nil {
			t.Fatalf("%s has no expected reading: %v", md, err)
		}
		out = append(out, corpusCase{name: filepath.Base(md), text: string(text), want: want})
	}
	return out
}

func TestCorpusVerdictsAreReadAsAPersonReadsThem(t *testing.T) {
	for _, c := range corpus(t, "verdict") {
		t.Run(c.name, func(t *testing.T) {
			var want struct {
				State          State
				Failed         []string
				ReasonContains string `json:"reason_contains"`
			}
			if err := json.Unmarshal(c.want, &want); err != nil {
				t.Fatal(err)
			}
			v := ParseVerdict(c.text)
			if v.State != want.State {
				t.Errorf("state %q, want %q", v.State, want.State)
			}
			if len(v.Failed) != 0 || len(want.Failed) != 0 {
				if !reflect.DeepEqual(v.Failed, want.Failed) {
					t.Errorf("not passed = %q, want %q", v.Failed, want.Failed)
				}
			}
			if !strings.Contains(v.Reason, want.ReasonContains) {
				t.Errorf("reason %q lacks %q", v.Reason, want.ReasonContains)
			}
		})
	}
}

func TestCorpusGoalsAreReadAsAPersonReadsThem(t *testing.T) {
	for _, c := range corpus(t, "goal") {
		t.Run(c.name, func(t *testing.T) {
			var want struct {
				StatementContains []string `json:"statement_contains"`
				Checks            []string
			}
			if err := json.Unmarshal(c.want, &want); err != nil {
				t.Fatal(err)
			}
			g := ParseGoal(c.text)
			if !reflect.DeepEqual(g.Checks, want.Checks) {
				t.Errorf("checks =\n%q\nwant\n%q", g.Checks, want.Checks)
			}
			for _, s := range want.StatementContains {
				if !strings.Contains(g.Statement, s) {
					t.Errorf("statement %q lacks %q", g.Statement, s)
				}
			}
			if !g.Complete() {
				t.Errorf("incomplete: %v", g.Missing(English))
			}
		})
	}
}

// sections reads a document's fields by key.
func briefFields(b *Brief) map[string]string {
	return map[string]string{"goal": b.Goal, "accept": b.Accept, "bounds": b.Bounds, "unknowns": b.Unknowns}
}

func handoffFields(h *Handoff) map[string]string {
	return map[string]string{"doing": h.Doing, "decided": h.Decided, "deadends": h.Deadends, "next": h.Next, "scene": h.Scene}
}

func TestCorpusBriefsAndHandoffsAreReadAsAPersonReadsThem(t *testing.T) {
	for _, kind := range []string{"brief", "handoff"} {
		for _, c := range corpus(t, kind) {
			t.Run(kind+"/"+c.name, func(t *testing.T) {
				var want struct {
					Complete bool
					Contains map[string]string
					Lacks    map[string]string
				}
				if err := json.Unmarshal(c.want, &want); err != nil {
					t.Fatal(err)
				}
				var fields map[string]string
				var complete bool
				if kind == "brief" {
					b := ParseBrief(c.text)
					fields, complete = briefFields(b), b.Complete()
				} else {
					h := ParseHandoff(c.text)
					fields, complete = handoffFields(h), h.Complete()
				}
				if complete != want.Complete {
					t.Errorf("complete = %v, want %v (%q)", complete, want.Complete, fields)
				}
				for k, s := range want.Contains {
					if !strings.Contains(fields[k], s) {
						t.Errorf("%s = %q lacks %q", k, fields[k], s)
					}
				}
				for k, s := range want.Lacks {
					if strings.Contains(fields[k], s) {
						t.Errorf("%s = %q holds %q", k, fields[k], s)
					}
				}
			})
		}
	}
}
