package serve

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Wrong tokens from one address: loginBurst are answered 401, then 429
// with Retry-After, the right token too (it is not compared), by login
// and by Authorization alike; one more try comes back each loginEvery.
func TestLoginRateLimited(t *testing.T) {
	const token = "secret-token-0123456789"
	ts := newServer(t, token)
	now := time.Unix(1_000_000, 0)
	ts.srv.limit.now = func() time.Time { return now }
	try := func(tok string) (int, string) {
		t.Helper()
		r, _ := http.NewRequest("POST", ts.http.URL+"/api/login", strings.NewReader(`{"token": "`+tok+`"}`))
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	for i := range loginBurst {
		if code, _ := try(fmt.Sprint("wrong-", i)); code != 401 {
			t.Fatalf("wrong token %d: %d, want 401", i+1, code)
		}
	}
	if code, after := try("wrong-again"); code != 429 || after != "6" {
		t.Errorf("one wrong token too many: %d, Retry-After %q; want 429, 6", code, after)
	}
	if code, _ := try(token); code != 429 {
		t.Errorf("the right token while waiting: %d, want 429", code)
	}
	if code, _ := ts.req("GET", "/api/runs", "", "Authorization", "Bearer "+token); code != 429 {
		t.Errorf("the token in Authorization while waiting: %d, want 429", code)
	}
	now = now.Add(loginEvery / 2)
	if code, after := try(token); code != 429 || after != "3" {
		t.Errorf("halfway: %d, Retry-After %q; want 429, 3", code, after)
	}
	now = now.Add(loginEvery / 2)
	if code, _ := try("wrong-later"); code != 401 {
		t.Errorf("a try after the wait: %d, want 401", code)
	}
	if code, _ := try(token); code != 429 {
		t.Errorf("a second try right after: %d, want 429", code)
	}
	now = now.Add(loginEvery)
	if code, _ := try(token); code != 200 {
		t.Errorf("the right token after the wait: %d, want 200", code)
	}
	// Requests without a token are not counted or held back.
	if code, _ := ts.req("GET", "/healthz", ""); code != 200 {
		t.Errorf("healthz: %d", code)
	}
}

// The limiter remembers at most maxAddrs addresses: those back to a
// full allowance go first, then those that may try now; an address
// made to wait is kept over them.
func TestLimiterBounded(t *testing.T) {
	l := newLimiter()
	now := time.Unix(1_000_000, 0)
	l.now = func() time.Time { return now }
	for range loginBurst {
		l.failed("attacker")
	}
	if l.wait("attacker") <= 0 {
		t.Fatal("attacker may try again at once")
	}
	for i := range maxAddrs + 500 {
		l.failed(fmt.Sprint("10.0.", i/256, ".", i%256))
		now = now.Add(100 * time.Microsecond)
	}
	if n := len(l.addrs); n > maxAddrs {
		t.Errorf("%d addresses remembered, want at most %d", n, maxAddrs)
	}
	if l.wait("attacker") <= 0 {
		t.Error("the waiting attacker was forgotten before addresses back to a full allowance")
	}
	if l.wait("10.0.0.0") != 0 {
		t.Error("an address with one wrong token may not try again")
	}
}

func TestAddrKey(t *testing.T) {
	for addr, want := range map[string]string{
		"192.0.2.7:5000":             "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:80":  "2001:db8:1:2::/64",
		"[::1]:9":                    "::/64",
		"not an address":             "not an address",
	} {
		if got := addrKey(&http.Request{RemoteAddr: addr}); got != want {
			t.Errorf("addrKey(%q) = %q, want %q", addr, got, want)
		}
	}
}
