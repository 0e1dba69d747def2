package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/flowerrun/flower/claude"
)

// layerRowsByUUID maps each loaded entry's uuid to its bytes.
func layerRowsByUUID(t *testing.T, rows []json.RawMessage) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for i, e := range layerDecode(t, rows) {
		if u, ok := e["uuid"].(string); ok {
			out[u] = rows[i]
		}
	}
	return out
}

// An expiry note, once written, must stay the same bytes on every later
// load: the CLI caches the prompt up to the last message, and a note whose
// age grew with each newer glance changed the history far back on every
// resume, so each resume's first request wrote the whole history to the
// cache again. Before the age was recorded, the second load showed "第 10
// 轮前" where the first had shown "第 9 轮前" (and so on for every note).
func TestExpiryNoteStaysTheSameOnEveryLaterLoad(t *testing.T) {
	ctx := context.Background()
	pointerZH := "[输出 5000 字符,已落盘到 .flower/spill/0123456789abcdef.txt —— 需要全文用 Read 读它,需要找东西用 Grep 搜它]\n开头 400 字符:a b c"
	var f fxTranscript
	f.prompt("u0", "look around")
	glance := func(i int) {
		id := fmt.Sprintf("toolu_%02d", i)
		content := fmt.Sprintf("On branch main\nnothing to commit (%d)", i)
		if i == 1 {
			content = pointerZH
		}
		f.bash(fmt.Sprintf("a%02d", i), id, "git status")
		f.result(fmt.Sprintf("r%02d", i), id, content, false)
	}
	for i := range 9 {
		glance(i)
	}
	first := f.rows(t)
	base := fxStore(t, first)
	ws := t.TempDir()
	load := func(key claude.SessionKey) map[string][]byte {
		t.Helper()
		// A new store each time, as a new process has.
		s := mustPruning(t, base, ws, TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
		return layerRowsByUUID(t, layerLoad(t, s, key))
	}
	one := load(fxKey)
	for i, age := range []int{9, 8, 7} {
		want := fmt.Sprintf("[`git status` 的结果已过期(第 %d 轮前),当前状态可能已变。需要请重新执行]", age)
		if i == 1 {
			want += "(当时的完整输出仍在 .flower/spill/0123456789abcdef.txt,需要时用 Read 读取)"
		}
		if got := layerResult(t, layerDecode(t, []json.RawMessage{one[fmt.Sprintf("r%02d", i)]}), fmt.Sprintf("r%02d", i))["content"]; got != want {
			t.Errorf("first load: r%02d = %q, want %q", i, got, want)
		}
	}

	// The resumed session glances twice more; the next load expires two
	// more results and must leave the three notes as the first load wrote
	// them.
	glance(9)
	glance(10)
	if err := base.Append(ctx, fxKey, f.rows(t)[len(first):]); err != nil {
		t.Fatal(err)
	}
	two := load(fxKey)
	for i := range 3 {
		u := fmt.Sprintf("r%02d", i)
		if !bytes.Equal(two[u], one[u]) {
			t.Errorf("second load changed the note of %s:\n  first  %s\n  second %s", u, one[u], two[u])
		}
	}
	for i, age := range map[int]int{3: 8, 4: 7} {
		want := fmt.Sprintf("[`git status` 的结果已过期(第 %d 轮前),当前状态可能已变。需要请重新执行]", age)
		u := fmt.Sprintf("r%02d", i)
		if got := layerResult(t, layerDecode(t, []json.RawMessage{two[u]}), u)["content"]; got != want {
			t.Errorf("second load: %s = %q, want %q (its age when first expired)", u, got, want)
		}
	}

	// A third load with nothing new, and a fork (the same calls under
	// another session), show every note as the second load did.
	fork := claude.SessionKey{ProjectKey: fxKey.ProjectKey, SessionID: "0f0f0f0f-0000-4000-8000-000000000001"}
	if err := base.Append(ctx, fork, f.rows(t)); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]map[string][]byte{"third load": load(fxKey), "fork": load(fork)} {
		for i := range 5 {
			u := fmt.Sprintf("r%02d", i)
			if !bytes.Equal(got[u], two[u]) {
				t.Errorf("%s changed the note of %s:\n  before %s\n  now    %s", name, u, two[u], got[u])
			}
		}
	}
}
