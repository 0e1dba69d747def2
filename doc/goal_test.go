package doc

import (
	"reflect"
	"testing"
)

func TestGoalChecksAreOnePerLineWithoutMarkers(t *testing.T) {
	texts := map[string]string{
		"zh": "# 目标\n做转换器\n\n# 判定清单\n- 跑 a\n* 跑 b\n+ 跑 c\n1. 跑 d\n2、跑 e\n3) 跑 f\n- 跑 g\n",
		"en": "## Goal: 做转换器\n## Checklist\n- 跑 a\n* 跑 b\n+ 跑 c\n1. 跑 d\n2、跑 e\n3) 跑 f\n\n\n- 跑 g",
		"ko": "**목표**\n做转换器\n**판정 목록**\n- 跑 a\n* 跑 b\n+ 跑 c\n1. 跑 d\n2、跑 e\n3) 跑 f\n- 跑 g",
	}
	want := &Goal{Statement: "做转换器", Checks: []string{"跑 a", "跑 b", "跑 c", "跑 d", "跑 e", "跑 f", "跑 g"}}
	for name, text := range texts {
		if got := ParseGoal(text); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
}

func TestChecklistsReadAsAPersonReadsThem(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"lines without markers are items", "## Checklist\nrun a\nrun b", []string{"run a", "run b"}},
		{"a wrapped item is one item", "## Checklist\n- run a and\n  see b\n- run c", []string{"run a and see b", "run c"}},
		{"a lazy continuation joins its item", "## Checklist\n- run a and\nsee b", []string{"run a and see b"}},
		{"a closing paragraph is not an item", "## Checklist\n- run a\n\nThese cover the build.", []string{"run a"}},
		{"a nested item joins its parent", "## Checklist\n1. tests pass\n   - go test ./...\n2. lint", []string{"tests pass; go test ./...", "lint"}},
		{"a command in a code block joins its item", "## Checklist\n- Run the tests:\n  ```bash\n  go test ./...\n  ```\n- b", []string{"Run the tests: `go test ./...`", "b"}},
		{"a code block alone gives one item a line", "## Checklist\n```\nmake\n./run --check\n```", []string{"make", "./run --check"}},
		{"a table gives its data rows", "## Checklist\n| # | Check | Expect |\n|---|:---|---|\n| 1 | `make` | exit 0 |\n| 2 | `./t` | prints ok |", []string{"`make` — exit 0", "`./t` — prints ok"}},
		{"none is no item", "## Checklist\n(none)", nil},
		{"a heading inside is no item", "## Checklist\n- a\n### more\n- b", []string{"a", "b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ParseGoal("## Goal\ng\n" + c.text).Checks; !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestGoalNeedsAStatementAndOneCheck(t *testing.T) {
	cases := []struct {
		g       Goal
		missing []string
	}{
		{Goal{Statement: "s", Checks: []string{"c"}}, nil},
		{Goal{Statement: "s"}, []string{"判定清单"}},
		{Goal{Checks: []string{"c"}}, []string{"目标"}},
		{Goal{}, []string{"目标", "判定清单"}},
	}
	for _, c := range cases {
		if got := c.g.Missing(Chinese); !reflect.DeepEqual(got, c.missing) || c.g.Complete() != (c.missing == nil) {
			t.Errorf("%+v: Missing = %q, Complete = %v; want %q", c.g, got, c.g.Complete(), c.missing)
		}
	}
	if got, want := (&Goal{}).Missing(English), []string{"Goal", "Checklist"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Missing(English) = %q, want %q", got, want)
	}
}

func TestUnverifiableChecksAreRecognisedInBothLanguages(t *testing.T) {
	g := &Goal{Checks: []string{
		"在 macOS 上运行 [此环境无法验证:容器是 Linux]",
		"[无法验证] 真机测试",
		"[ 此环境无法验证 ：没有 GPU]",
		"runs on macOS [cannot verify here: the container is Linux]",
		"[Cannot Verify Here: no GPU] trains fast",
		"[cannot verify] real device",
		UnverifiableMarker(Chinese, "x"),
		UnverifiableMarker(English, "x"),
		"go test ./... passes",
		"无法验证的东西要写清楚",
		"cannot verify without a key",
	}}
	want := g.Checks[:8]
	if got := g.Unverifiable(); !reflect.DeepEqual(got, want) {
		t.Errorf("Unverifiable() =\n%q\nwant\n%q", got, want)
	}
	if UnverifiableMarker(Chinese, "容器是 Linux") != "[此环境无法验证:容器是 Linux]" {
		t.Errorf("Chinese marker = %q", UnverifiableMarker(Chinese, "容器是 Linux"))
	}
	if UnverifiableMarker(English, "no GPU") != "[cannot verify here: no GPU]" {
		t.Errorf("English marker = %q", UnverifiableMarker(English, "no GPU"))
	}
}

func TestAmendAppendsAndNeverOverwrites(t *testing.T) {
	g := &Goal{Statement: "做转换器  ", Checks: []string{"c"}}
	g.Amend(Chinese, "  也要支持表格 ")
	if want := "做转换器\n\n(已修改)也要支持表格"; g.Statement != want {
		t.Errorf("Statement = %q, want %q", g.Statement, want)
	}
	g.Amend(English, "and images")
	if want := "做转换器\n\n(已修改)也要支持表格\n\n(amended) and images"; g.Statement != want {
		t.Errorf("Statement = %q, want %q", g.Statement, want)
	}
	before := g.Statement
	g.Amend(Chinese, "   ")
	if g.Statement != before {
		t.Error("an empty amendment changed the statement")
	}
	back := ParseGoal(g.ToMarkdown(Chinese))
	if back.Statement != g.Statement {
		t.Errorf("amended statement does not survive the disk: %q", back.Statement)
	}
}

func TestGoalMarkdownReproducesTheChineseLiterals(t *testing.T) {
	g := &Goal{Statement: "做转换器", Checks: []string{"跑 a", "跑 b"}}
	if got, want := g.ToMarkdown(Chinese), "# 目标\n做转换器\n\n# 判定清单\n- 跑 a\n- 跑 b\n"; got != want {
		t.Errorf("ToMarkdown(Chinese) = %q, want %q", got, want)
	}
	if got, want := (&Goal{Statement: "s"}).ToMarkdown(Chinese), "# 目标\ns\n\n# 判定清单\n(空)\n"; got != want {
		t.Errorf("ToMarkdown(Chinese) without checks = %q, want %q", got, want)
	}
	if got, want := g.ToMarkdown(English), "# Goal\n做转换器\n\n# Checklist\n- 跑 a\n- 跑 b\n"; got != want {
		t.Errorf("ToMarkdown(English) = %q, want %q", got, want)
	}
	if got, want := g.PromptBlock(Chinese), "## 目标\n做转换器\n\n## 判定清单\n- 跑 a\n- 跑 b"; got != want {
		t.Errorf("PromptBlock(Chinese) = %q, want %q", got, want)
	}
	if got, want := (&Goal{Statement: "s"}).PromptBlock(English), "## Goal\ns"; got != want {
		t.Errorf("PromptBlock(English) without checks = %q, want %q", got, want)
	}
}
