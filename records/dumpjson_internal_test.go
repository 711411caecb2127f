package records

import "testing"

// Timestamps in any session zone take row_to_json's XSD form: "T" for the
// space and a zone of at least ±hh:mm (ISO prints ±hh when the minutes are
// zero), seconds of a historical zone kept, BC and infinity as they are.
func TestAppendTimestampTakesTheXSDForm(t *testing.T) {
	for in, want := range map[string]string{
		"2026-11-27 01:47:07.123456+00": `"2026-11-27T01:47:07.123456+00:00"`,
		"2026-11-27 01:47:07-03":        `"2026-11-27T01:47:07-03:00"`,
		"2026-06-01 17:30:00.5+05:30":   `"2026-06-01T17:30:00.5+05:30"`,
		"2026-06-01 17:30:00-03:30":     `"2026-06-01T17:30:00-03:30"`,
		"1900-01-01 00:00:00+05:53:28":  `"1900-01-01T00:00:00+05:53:28"`,
		"0044-03-15 12:00:00+00 BC":     `"0044-03-15T12:00:00+00:00 BC"`,
		"2026-11-27 01:47:07":           `"2026-11-27T01:47:07"`,
		"infinity":                      `"infinity"`,
		"-infinity":                     `"-infinity"`,
	} {
		if got := string(appendTimestamp(nil, []byte(in))); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}
