package ephemeral

import (
	"reflect"
	"testing"
)

// TestCommandsGivesTheWordsBashPasses: quotes and backslashes are removed
// as bash removes them, a leading cd is kept as the folder the rest
// starts in, and what the shell decides is marked.
func TestCommandsGivesTheWordsBashPasses(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want []Command
	}{
		{`cat ~/.config/flower/.en''v`, []Command{{Words: []Word{{Text: "cat"}, {Text: "~/.config/flower/.env", Quoted: true}}}}},
		{`cat ~/.config/flower/.e\nv "a b"`, []Command{{Words: []Word{{Text: "cat"}, {Text: "~/.config/flower/.env", Quoted: true}, {Text: "a b", Quoted: true}}}}},
		{`cd ~/.config && grep -r x fl*`, []Command{{Dir: "~/.config", Words: []Word{{Text: "grep"}, {Text: "-r"}, {Text: "x"}, {Text: "fl*", Glob: true}}}}},
		{`ls $HOME | wc -l`, []Command{{Words: []Word{{Text: "ls"}, {Text: "$HOME", Expands: true}}}, {Words: []Word{{Text: "wc"}, {Text: "-l"}}}}},
	} {
		got, ok := Commands(c.cmd)
		if !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Commands(%q) = %+v, %v; want %+v", c.cmd, got, ok, c.want)
		}
	}
	for _, cmd := range []string{"cat $(echo ~/.env)", "cat `x`", "(cat x)", "cat < x", ""} {
		if _, ok := Commands(cmd); ok {
			t.Errorf("Commands(%q) read a line outside the grammar", cmd)
		}
	}
}
