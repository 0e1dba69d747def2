package lang

import "testing"

func TestIsEnglish(t *testing.T) {
	for tag, want := range map[string]bool{
		"en": true, "EN": true, "en-US": true, "en_GB": true,
		"": false, "zh": false, "zh-CN": false, "english": false, "ko": false,
	} {
		if got := IsEnglish(tag); got != want {
			t.Errorf("IsEnglish(%q) = %v, want %v", tag, got, want)
		}
	}
}
