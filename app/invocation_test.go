package app

import "testing"

// A help text names the command where it stands alone and leaves paths,
// modules and folders that hold the word alone (they were mangled into
// ~/.config//tmp/x/flower/.env once the name became a path).
func TestNamedPutsTheCommandOnlyWhereTheWordStandsAlone(t *testing.T) {
	t.Parallel()
	m := &Command{Name: "/tmp/x y/flower"}
	for in, want := range map[string]string{
		"Usage: flower go [flags]": "Usage: /tmp/x y/flower go [flags]",
		"run `flower report`.":     "run `/tmp/x y/flower report`.",
		"用法:flower version":        "用法:/tmp/x y/flower version",
		"then run flower.":         "then run /tmp/x y/flower.",
		"~/.config/flower/.env":    "~/.config/flower/.env",
		"go install github.com/flowerrun/flower/cmd/flower@latest": "go install github.com/flowerrun/flower/cmd/flower@latest",
		"the workbench in .flower":                                 "the workbench in .flower",
		"flower's own files":                                       "flower's own files",
		"(flower runs lists them)":                                 "(/tmp/x y/flower runs lists them)",
		"FLOWER_CLAUDE=flower.go":                                  "FLOWER_CLAUDE=flower.go",
	} {
		if got := m.named(in); got != want {
			t.Errorf("named(%q) = %q, want %q", in, got, want)
		}
	}
	if got := (&Command{Name: "flower"}).named("~/.config/flower"); got != "~/.config/flower" {
		t.Errorf("the plain name changed %q", got)
	}
}
