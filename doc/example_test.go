package doc_test

import (
	"fmt"

	"github.com/flowerrun/flower/doc"
)

func ExampleParseBrief() {
	b := doc.ParseBrief("**目标**: 把 Markdown 转成 HTML\n3. 边界\n不做 GUI\n```\n## 验收标准\n(pasted code)\n```")
	fmt.Println(b.Goal)
	fmt.Println(b.Bounds)
	fmt.Println(b.Missing(doc.Chinese), b.Missing(doc.English))
	// Output:
	// 把 Markdown 转成 HTML
	// 不做 GUI
	// ```
	// ## 验收标准
	// (pasted code)
	// ```
	// [验收标准 未知与假设] [Acceptance criteria Unknowns and assumptions]
}

func ExampleParseVerdict() {
	for _, reply := range []string{
		"## 结论\n未达成\n## 理由\n只跑了一半测试",
		"Conclusion: achieved, no gaps",
		"Achieved, but I cannot verify it on Linux.",
		"0",
		"I looked at the code.",
	} {
		v := doc.ParseVerdict(reply)
		fmt.Printf("%q ok=%v\n", v.State, v.Ok())
	}
	// Output:
	// "not_yet" ok=true
	// "achieved" ok=true
	// "unreachable" ok=true
	// "not_yet" ok=true
	// "" ok=false
}

func ExampleDegraded() {
	h := doc.Degraded(doc.English, "work", "Build a converter.", "missing Doing now/Next step")
	fmt.Println(h.IsDegraded(), h.Complete())
	fmt.Println(h.Doing)
	// Output:
	// true true
	// [degraded: handoff not written] The previous session's context filled up in step "work", but the handoff could not be written (missing Doing now/Next step).
}
