package doc

import (
	"reflect"
	"strings"
	"testing"
)

func TestBriefMarkdownReproducesTheChineseLiterals(t *testing.T) {
	b := &Brief{Goal: "做一个转换器", Bounds: "不做 GUI"}
	want := "# 需求确认书\n\n" +
		"> 由 clarify 步骤生成并**冻结**。要改需求就改这个文件;\n" +
		"> 想重新确认一遍,删掉它再跑。\n\n" +
		"## 目标\n\n做一个转换器\n\n" +
		"## 验收标准\n\n(未填)\n\n" +
		"## 边界\n\n不做 GUI\n\n" +
		"## 未知与假设\n\n(未填)\n"
	if got := b.ToMarkdown(Chinese); got != want {
		t.Errorf("ToMarkdown(Chinese) =\n%s\nwant\n%s", got, want)
	}
}

func TestBriefMarkdownInEnglishUsesEnglishHeadingsAndPlaceholder(t *testing.T) {
	got := (&Brief{Goal: "build a converter"}).ToMarkdown(English)
	for _, want := range []string{"# Brief\n", "## Goal\n\nbuild a converter\n", "## Acceptance criteria\n\n(not filled in)\n",
		"## Boundaries\n", "## Unknowns and assumptions\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("ToMarkdown(English) lacks %q:\n%s", want, got)
		}
	}
}

func TestZeroLangRendersEnglishAndZhRendersChinese(t *testing.T) {
	b := &Brief{Goal: "x"}
	if b.ToMarkdown("") != b.ToMarkdown(English) || b.ToMarkdown("zh-CN") != b.ToMarkdown(Chinese) || b.ToMarkdown("") == b.ToMarkdown(Chinese) {
		t.Error("the zero Lang should render English, zh-CN Chinese")
	}
}

func TestBriefMissingNamesEmptySectionsInTheChosenLanguage(t *testing.T) {
	b := &Brief{Goal: "g", Bounds: "  "}
	if got, want := b.Missing(Chinese), []string{"验收标准", "边界", "未知与假设"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Missing(Chinese) = %q, want %q", got, want)
	}
	if got, want := b.Missing(English), []string{"Acceptance criteria", "Boundaries", "Unknowns and assumptions"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Missing(English) = %q, want %q", got, want)
	}
	if b.Complete() {
		t.Error("a brief with three empty sections is complete")
	}
	full := &Brief{Goal: "g", Accept: "a", Bounds: "b", Unknowns: "u"}
	if !full.Complete() || full.Missing(Chinese) != nil {
		t.Errorf("a full brief is incomplete: missing %q", full.Missing(Chinese))
	}
}

func TestBriefPromptBlockHasOnlySectionsWithContent(t *testing.T) {
	b := &Brief{Goal: "g", Unknowns: "u"}
	if got, want := b.PromptBlock(Chinese), "## 目标\ng\n\n## 未知与假设\nu"; got != want {
		t.Errorf("PromptBlock(Chinese) = %q, want %q", got, want)
	}
	if got, want := b.PromptBlock(English), "## Goal\ng\n\n## Unknowns and assumptions\nu"; got != want {
		t.Errorf("PromptBlock(English) = %q, want %q", got, want)
	}
}

func TestAmendmentsAppendedToABriefFileEndUpInUnknowns(t *testing.T) {
	b := &Brief{Goal: "g", Accept: "a", Bounds: "b", Unknowns: "u"}
	got := ParseBrief(b.ToMarkdown(Chinese) + "\n(运行中补充)也支持 Windows\n")
	if got.Unknowns != "u\n\n(运行中补充)也支持 Windows" {
		t.Errorf("Unknowns = %q", got.Unknowns)
	}
}

func TestAKoreanBriefParses(t *testing.T) {
	got := ParseBrief("## 목표\n변환기\n## 검수 기준\n테스트 통과\n## 경계\nGUI 없음\n## 미지와 가정\n없음")
	want := &Brief{Goal: "변환기", Accept: "테스트 통과", Bounds: "GUI 없음", Unknowns: "없음"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// Words the human channel appended to the brief file stay in its last
// section whatever the block's label: the English wake label was read as
// an unknown heading (its alias said "Added when woken") and its words
// were dropped, and a label of a channel's own texts can never be listed.
func TestAmendedBlocksStayInTheSectionAbove(t *testing.T) {
	base := "## Goal\nA tool\n\n## Acceptance criteria\n- cat hello.txt\n\n## Boundaries\nNo UI\n\n## Unknowns and assumptions\nNone known\n"
	for _, block := range []string{
		"\n## Added during the run (12:00:00)\nuse postgres\n",
		"\n## Added on waking (12:01:00)\nuse postgres\n",
		"\n## 运行中补充(12:02:00)\nuse postgres\n",
		"\n## 唤醒时追加(12:03:00)\nuse postgres\n",
		"\n## Noted by Ann (09:10:11)\nuse postgres\n",
	} {
		b := ParseBrief(base + block)
		if !strings.Contains(b.Unknowns, "use postgres") || !strings.Contains(b.Unknowns, "None known") {
			t.Errorf("%q: unknowns = %q, want both the section's words and the added ones", block, b.Unknowns)
		}
		if len(b.Missing(English)) != 0 {
			t.Errorf("%q: missing %v", block, b.Missing(English))
		}
	}
	// A stamped heading is a block only where a section holds it: a
	// document that opens with one has no section to add to.
	if b := ParseBrief("## Added during the run (12:00:00)\nuse postgres\n"); b.Unknowns != "" {
		t.Errorf("a lone block became the unknowns: %q", b.Unknowns)
	}
}
