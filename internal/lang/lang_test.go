package lang

import (
	"strings"
	"testing"
)

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

func TestCheckAcceptsEnglishAndChineseOnly(t *testing.T) {
	for tag, ok := range map[string]bool{
		"": true, "en": true, "en-US": true, "EN_gb": true, "zh": true, "zh-CN": true, "ZH_tw": true,
		"ko": false, "english": false, "fr": false, "e": false, "zhx": false, "-": false,
	} {
		err := Check(tag)
		if (err == nil) != ok {
			t.Errorf("Check(%q) = %v, want ok=%v", tag, err, ok)
		}
		if err != nil && (!strings.Contains(err.Error(), `"en"`) || !strings.Contains(err.Error(), `"zh"`)) {
			t.Errorf("Check(%q) = %q: the error must list both languages", tag, err)
		}
	}
}
