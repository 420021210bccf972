package codes

import (
	"regexp"
	"testing"
)

// Each code is in the table once, spelled as codes are, and its row says
// what it is.
func TestTable(t *testing.T) {
	shape := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	seen := map[Code]bool{}
	for _, in := range All() {
		if !shape.MatchString(string(in.Code)) {
			t.Errorf("code %q is not lower_snake_case", in.Code)
		}
		if seen[in.Code] {
			t.Errorf("code %s is in the table twice", in.Code)
		}
		seen[in.Code] = true
		if in.Summary == "" {
			t.Errorf("code %s has no summary", in.Code)
		}
		if in.Severity == Warning && in.Kind != Diagnostic {
			t.Errorf("code %s: only a diagnostic can be a warning", in.Code)
		}
		if got, ok := Lookup(in.Code); !ok || got != in {
			t.Errorf("Lookup(%s) = %+v, %v", in.Code, got, ok)
		}
	}
	if SeverityOf(MaybeUnmet) != Warning || SeverityOf(UnreachableStep) != Error || SeverityOf("no_such_code") != Error {
		t.Error("SeverityOf does not follow the table")
	}
}
