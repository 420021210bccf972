package temporaltest

import (
	"encoding/json"
	"fmt"
)

// Comparable is what both engines must agree on in a run's result object
// (the JSON of `skein run --json`): status, error, output, path and each
// step's status, visits, output and code, and a child flow's run the same
// way. Run ids, times and durations differ from run to run and are left
// out.
type Comparable struct {
	Status string          `json:"status"`
	Error  any             `json:"error"`
	Output any             `json:"output"`
	Path   []string        `json:"path"`
	Steps  map[string]Step `json:"steps"`
}

// Step is what both engines must agree on in a step record.
type Step struct {
	Status string `json:"status"`
	Visits int    `json:"visits"`
	Output any    `json:"output"`
	Code   string `json:"code"`
	// Child is a child flow's run, with its own steps.
	Child *Comparable `json:"child"`
}

// Decode reads the comparable part of a result object.
func Decode(b []byte) (Comparable, error) {
	var c Comparable
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("result: %v\n%s", err, b)
	}
	return c, nil
}

// WithoutTimes drops from c what the two engines take from their own
// clocks: when an approval was decided (its output's "at"), in c and its
// child flows' runs.
func (c Comparable) WithoutTimes() Comparable {
	for name, st := range c.Steps {
		if m, ok := st.Output.(map[string]any); ok && m["approved"] != nil {
			delete(m, "at")
		}
		if st.Child != nil {
			ch := st.Child.WithoutTimes()
			st.Child = &ch
		}
		c.Steps[name] = st
	}
	return c
}
