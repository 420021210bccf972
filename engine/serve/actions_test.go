package serve

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestApproveAndReject(t *testing.T) {
	ts := newServer(t, "")
	ts.session()
	ok := ts.start("gate.star", "")
	no := ts.start("gate.star", "")
	for _, id := range []string{ok, no} {
		if m := ts.run(id); status(m) != "waiting" || m["run"].(map[string]any)["at"] != "ask" {
			t.Fatalf("run %s: %v", id, m["run"])
		}
	}
	aps := ts.must(200, "GET", "/api/approvals", "")["approvals"].([]any)
	if len(aps) != 2 {
		t.Fatalf("approvals: %v", aps)
	}
	a := aps[0].(map[string]any)
	if a["run"].(map[string]any)["id"] != ok {
		a = aps[1].(map[string]any) // the runs are asked at once, in either order
	}
	if a["message"] != "Ship it?" || a["step"] != "ask" || a["run"].(map[string]any)["id"] != ok || a["status"] != "waiting" {
		t.Errorf("approval: %v", a)
	}
	ts.must(404, "POST", "/api/runs/"+ok+"/approve", `{"step": "nope"}`)
	ts.must(400, "POST", "/api/runs/"+ok+"/approve", `{"values": {"x": 1}}`)

	m := ts.must(200, "POST", "/api/runs/"+ok+"/approve", `{"reason": "looks good"}`)
	if ap := m["approval"].(map[string]any); ap["status"] != "approved" || ap["by"] != "alice" || ap["reason"] != "looks good" {
		t.Errorf("approved: %v", ap)
	}
	m = ts.must(200, "POST", "/api/runs/"+no+"/reject", `{"step": "ask", "reason": "not today"}`)
	if ap := m["approval"].(map[string]any); ap["status"] != "rejected" {
		t.Errorf("rejected: %v", ap)
	}
	ts.must(409, "POST", "/api/runs/"+no+"/approve", `{}`)

	got := ts.run(ok)
	if status(got) != "succeeded" {
		t.Fatalf("approved run: %v", got["run"])
	}
	ship := ""
	for _, at := range got["attempts"].([]any) {
		if at := at.(map[string]any); at["step"] == "ship" {
			ship = at["stdout"].(string)
		}
	}
	if ship != "shipped by alice\n" {
		t.Errorf("ship printed %q", ship)
	}
	// Its event stream has the decision, and the steps after it.
	var seen []string
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ts.events(ctx, ok, func(event string, d map[string]any) {
		switch event {
		case "approval":
			seen = append(seen, "approval "+d["step"].(string)+" "+d["status"].(string)+" by "+d["by"].(string))
		case "attempt":
			if d["status"] != "running" {
				seen = append(seen, d["step"].(string)+" "+d["status"].(string))
			}
		}
	})
	if got, want := strings.Join(seen, ", "), "build succeeded, ask waiting, ask succeeded, ship succeeded, approval ask approved by alice"; got != want {
		t.Errorf("events: %s, want %s", got, want)
	}
	got = ts.run(no)
	if status(got) != "succeeded" || step(t, got, "rollback")["status"] != "succeeded" || step(t, got, "ship")["status"] != "skipped" {
		t.Errorf("rejected run: %v %v", got["run"], got["steps"])
	}
	if aps := ts.must(200, "GET", "/api/approvals", "")["approvals"].([]any); len(aps) != 0 {
		t.Errorf("approvals left: %v", aps)
	}
}

func TestResumeFrom(t *testing.T) {
	ts := newServer(t, "")
	ts.session()
	id := ts.start("fail.star", "")
	m := ts.run(id)
	if status(m) != "failed" {
		t.Fatalf("run: %v", m["run"])
	}
	broken := step(t, m, "broken")
	e, _ := broken["error"].(map[string]any)
	if broken["status"] != "failed" || e == nil || e["line"] != 4.0 || e["col"] == nil || !strings.HasSuffix(e["file"].(string), "fail.star") {
		t.Errorf("failed step: %v", broken)
	}
	var stderr string
	for _, at := range m["attempts"].([]any) {
		if at := at.(map[string]any); at["step"] == "broken" {
			stderr = at["stderr"].(string)
		}
	}
	if stderr != "oops\n" {
		t.Errorf("stderr %q", stderr)
	}
	ts.must(409, "POST", "/api/runs/"+id+"/cancel", "")
	os.WriteFile(filepath.Join(ts.dir, "fixed"), nil, 0o644)
	ts.must(400, "POST", "/api/runs/"+id+"/resume", `{"from": "nope"}`)
	r := ts.must(201, "POST", "/api/runs/"+id+"/resume", `{"from": "prep"}`)["run"].(map[string]any)
	if r["resumed_from"] != id || r["id"] == id {
		t.Fatalf("resumed: %v", r)
	}
	m = ts.run(r["id"].(string))
	if status(m) != "succeeded" {
		t.Fatalf("resumed run: %v", m["run"])
	}
	// prep ran again (from it), so two attempts of it are in the new run.
	if n := step(t, m, "prep")["attempts"]; n != 1.0 {
		t.Errorf("prep attempts in the new run: %v", n)
	}
	ts.must(409, "POST", "/api/runs/"+r["id"].(string)+"/resume", `{}`) // succeeded: nothing left
}

func TestCancel(t *testing.T) {
	ts := newServer(t, "")
	ts.session()
	id := ts.start("live.star", "")
	ts.must(200, "POST", "/api/runs/"+id+"/cancel", "")
	ts.srv.Wait()
	m := ts.must(200, "GET", "/api/runs/"+id, "")
	if status(m) != "cancelled" {
		t.Fatalf("cancelled run: %v", m["run"])
	}
	ts.must(409, "POST", "/api/runs/"+id+"/cancel", "")

	// A run that waits for an approval is cancelled too: resumed from its
	// record and cancelled, with who did it.
	id = ts.start("gate.star", "")
	if m := ts.run(id); status(m) != "waiting" {
		t.Fatalf("run: %v", m["run"])
	}
	ts.must(200, "POST", "/api/runs/"+id+"/cancel", `{"reason": "not needed"}`)
	m = ts.run(id)
	if status(m) != "cancelled" || !strings.Contains(m["run"].(map[string]any)["error"].(map[string]any)["message"].(string), "alice: not needed") {
		t.Errorf("cancelled waiting run: %v", m["run"])
	}
	ts.must(404, "POST", "/api/runs/nope/cancel", "")
}

// An approval that declares fields lists them, refuses values that do not
// fit (the approval stays open) and takes typed JSON values.
func TestApproveValues(t *testing.T) {
	ts := newServer(t, "")
	ts.session()
	id := ts.start("fields.star", "")
	if m := ts.run(id); status(m) != "waiting" {
		t.Fatalf("run: %v", m["run"])
	}
	aps := ts.must(200, "GET", "/api/approvals", "")["approvals"].([]any)
	if len(aps) != 1 {
		t.Fatalf("approvals: %v", aps)
	}
	fields := aps[0].(map[string]any)["fields"].([]any)
	if len(fields) != 3 || fields[0].(map[string]any)["name"] != "version" || fields[0].(map[string]any)["help"] != "the version to ship" ||
		fields[1].(map[string]any)["type"] != "int" || len(fields[2].(map[string]any)["choices"].([]any)) != 2 {
		t.Errorf("fields: %v", fields)
	}
	for _, bad := range []string{
		`{}`, // version is required
		`{"values": {"version": "1.2", "replicas": "three"}}`,
		`{"values": {"version": "1.2", "rollout": "most"}}`,
		`{"values": {"version": "1.2", "replics": 3}}`,
		`{"values": {"version": "1.2", "replicas": 2.5}}`,
	} {
		if m := ts.must(400, "POST", "/api/runs/"+id+"/approve", bad); errCode(m) != "bad_request" {
			t.Errorf("%s: %v", bad, m)
		}
	}
	m := ts.must(200, "POST", "/api/runs/"+id+"/approve", `{"values": {"version": "1.2", "replicas": 3}}`)
	if v, _ := m["approval"].(map[string]any)["values"].(map[string]any); v["version"] != "1.2" || v["replicas"] != 3.0 || v["rollout"] != "canary" {
		t.Errorf("decided values: %v", m["approval"])
	}
	got := ts.run(id)
	if status(got) != "succeeded" {
		t.Fatalf("run: %v", got["run"])
	}
	for _, at := range got["attempts"].([]any) {
		if at := at.(map[string]any); at["step"] == "ship" && at["stdout"] != "1.2 x3 canary\n" {
			t.Errorf("ship printed %q", at["stdout"])
		}
	}
}
