package serve

// This file bounds guessing the token: each remote address gets a few
// wrong tokens, then one more now and then, and is answered 429 with
// Retry-After in between.

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Wrong tokens an address may send: loginBurst at once, then one every
// loginEvery.
const (
	loginBurst = 10
	loginEvery = 6 * time.Second
)

// maxAddrs bounds the addresses the limiter remembers (see forget).
const maxAddrs = 10000

// limiter counts the wrong tokens of each remote address.
type limiter struct {
	mu    sync.Mutex
	addrs map[string]*rate.Limiter
	now   func() time.Time // (tests move it)
}

func newLimiter() *limiter {
	return &limiter{addrs: map[string]*rate.Limiter{}, now: time.Now}
}

// addrKey is who a request comes from: its remote IP address; an IPv6
// one by its /64 network, which one machine is usually given whole.
func addrKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return ip.String()
}

// wait is how long the address must wait before it may try a token
// again: 0 when it may now.
func (l *limiter) wait(key string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.addrs[key]
	if a == nil {
		return 0
	}
	now := l.now()
	if t := a.TokensAt(now); t < 1 {
		return time.Duration((1 - t) * float64(loginEvery))
	}
	return 0
}

// failed counts a wrong token from the address.
func (l *limiter) failed(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	a := l.addrs[key]
	if a == nil {
		if len(l.addrs) >= maxAddrs {
			l.forget(now)
		}
		a = rate.NewLimiter(rate.Every(loginEvery), loginBurst)
		l.addrs[key] = a
	}
	a.AllowN(now, 1)
}

// forget makes room: it drops the addresses back to a full allowance
// (they would get it anyway); if that is not enough, those that may try
// now (forgetting one gives it back at most loginBurst tries); if not
// even that, any one. An address made to wait is the last to be let off.
// It is called holding l.mu.
func (l *limiter) forget(now time.Time) {
	var free []string
	for k, a := range l.addrs {
		switch t := a.TokensAt(now); {
		case t >= loginBurst:
			delete(l.addrs, k)
		case t >= 1:
			free = append(free, k)
		}
	}
	if len(l.addrs) < maxAddrs {
		return
	}
	for _, k := range free {
		delete(l.addrs, k)
	}
	for k := range l.addrs {
		if len(l.addrs) < maxAddrs {
			break
		}
		delete(l.addrs, k)
	}
}

// tooMany answers 429 for an address that must wait d.
func tooMany(w http.ResponseWriter, d time.Duration) {
	secs := int(math.Ceil(d.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	fail(w, http.StatusTooManyRequests, "too_many_requests", "too many wrong tokens from this address: try again in "+strconv.Itoa(max(secs, 1))+" s")
}
