package guard

import (
	"fmt"
	"testing"
)

// A wall's refusal is told from a tool's own failure in either language.
func TestRefusedTellsAWallsRefusalFromAToolsFailure(t *testing.T) {
	for _, texts := range []Texts{EnglishTexts, ChineseTexts} {
		for _, s := range []string{
			fmt.Sprintf(texts.WhitelistDeny, "The coordinator", "Bash"),
			fmt.Sprintf(texts.DelegateDeny, "Write", DefaultArtifacts),
			texts.GlanceBackground,
		} {
			if !Refused(s) {
				t.Errorf("not seen as a refusal: %q", s)
			}
		}
	}
	for _, s := range []string{"", "ls: cannot access 'x': No such file or directory", "Exit code 1"} {
		if Refused(s) {
			t.Errorf("a tool's own failure seen as a refusal: %q", s)
		}
	}
}
