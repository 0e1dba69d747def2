package app

import (
	"testing"
	"time"
)

// --ended-before takes an age in days or Go's units, or a date; anything
// else (a word, a negative age) is refused rather than read as "now".
func TestParseAgeReadsAgesAndDatesAndRefusesTheRest(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.Local)
	for in, want := range map[string]time.Time{
		"30d":                  now.AddDate(0, 0, -30),
		"12h":                  now.Add(-12 * time.Hour),
		"90m":                  now.Add(-90 * time.Minute),
		"0s":                   now,
		"2026-01-31":           time.Date(2026, 1, 31, 0, 0, 0, 0, time.Local),
		"2026-01-31T15:04":     time.Date(2026, 1, 31, 15, 4, 0, 0, time.Local),
		"2026-01-31T15:04:05Z": time.Date(2026, 1, 31, 15, 4, 5, 0, time.UTC),
	} {
		got, err := parseAge(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "3x", "3 weeks", "-5h", "d", "30days", "2026-13-01", "99999999999d"} {
		if got, err := parseAge(in, now); err == nil {
			t.Errorf("parseAge(%q) = %v, want an error", in, got)
		}
	}
}
