package serve

// This file is who may do what: the token, session cookies and CSRF
// tokens, the host names a loopback server answers to, and the bounds on
// every request (guard).

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const (
	// sessionCookie holds a session: an id and the server's signature.
	sessionCookie = "skein_session"
	// csrfHeader carries the CSRF token of the session a state-changing
	// request comes with.
	csrfHeader = "X-Skein-CSRF"
	// maxBody bounds a request's body.
	maxBody = 1 << 20
	// writeTimeout bounds writing a response other than an event stream.
	writeTimeout = 60 * time.Second
)

func newKey() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}

// IsLoopback reports whether addr (host:port, as for net.Listen) listens
// on loopback only: a loopback address, or localhost. An empty host
// (every interface) is not.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return loopbackHost(host)
}

func loopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// sign is the server's signature of msg.
func (s *Server) sign(msg string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(msg))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// newSession returns a session cookie's value: a random id, whether it
// was given for the token, and the signature of both.
func (s *Server) newSession(authed bool) string {
	b := make([]byte, 18)
	rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b) + "."
	if authed {
		v += "t"
	} else {
		v += "-"
	}
	return v + "." + s.sign("session|"+v)
}

// session returns the request's session (its cookie's id and flag), if
// it has a valid one.
func (s *Server) session(r *http.Request) (id string, authed, ok bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", false, false
	}
	i := strings.LastIndexByte(c.Value, '.')
	if i < 0 {
		return "", false, false
	}
	v, sig := c.Value[:i], c.Value[i+1:]
	if !hmac.Equal([]byte(sig), []byte(s.sign("session|"+v))) {
		return "", false, false
	}
	return v, strings.HasSuffix(v, ".t"), true
}

// csrf is the CSRF token of session id.
func (s *Server) csrf(id string) string { return s.sign("csrf|" + id) }

// bearer reports whether the request carries a token, and whether it is
// the server's (compared in constant time).
func (s *Server) bearer(r *http.Request) (given, right bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return false, false
	}
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || s.cfg.Token == "" {
		return true, false
	}
	return true, subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(s.cfg.Token)) == 1
}

// guard is every request's gate: host names, security headers, the
// write timeout, the body bound, authentication and, for a request that
// changes state, the token or a session with its CSRF token.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		if s.cfg.Loopback {
			host, _, err := net.SplitHostPort(r.Host)
			if err != nil {
				host = r.Host
			}
			if !loopbackHost(host) {
				fail(w, http.StatusForbidden, "forbidden", "this server answers only to localhost and loopback addresses, not "+r.Host)
				return
			}
		}
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		}
		api := strings.HasPrefix(r.URL.Path, "/api/")
		if !api {
			next.ServeHTTP(w, r)
			return
		}
		login := r.URL.Path == "/api/login"
		if r.Header.Get("Authorization") != "" || login {
			// A try at the token: not even compared while its address
			// has to wait.
			if d := s.limit.wait(addrKey(r)); d > 0 {
				tooMany(w, d)
				return
			}
		}
		given, right := s.bearer(r)
		if given && !right {
			s.limit.failed(addrKey(r))
			fail(w, http.StatusUnauthorized, "unauthorized", "wrong token")
			return
		}
		_, authed, hasSession := s.session(r)
		// GET /api/session answers without the token: it says whether
		// the request is logged in, so the page knows to ask for it.
		open := login || (r.Method == http.MethodGet && r.URL.Path == "/api/session")
		if s.cfg.Token != "" && !right && !(hasSession && authed) && !open {
			fail(w, http.StatusUnauthorized, "unauthorized", "this server needs its token: send Authorization: Bearer TOKEN, or log in")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !right {
			if !sameOrigin(r) {
				fail(w, http.StatusForbidden, "forbidden", "the request comes from another origin")
				return
			}
			if !login && !s.csrfOK(r) {
				fail(w, http.StatusForbidden, "forbidden", "a change needs the token, or the session cookie and its CSRF token in "+csrfHeader+" (GET /api/session gives them)")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// csrfOK reports whether the request has a session and its CSRF token.
func (s *Server) csrfOK(r *http.Request) bool {
	id, _, ok := s.session(r)
	if !ok {
		return false
	}
	got := r.Header.Get(csrfHeader)
	return got != "" && hmac.Equal([]byte(got), []byte(s.csrf(id)))
}

// sameOrigin reports whether the request's Origin, when it has one, is
// the server's own (its Host); a request without one (curl, or a browser
// navigating) passes.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || o == "null" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

// sessionJSON is GET /api/session's answer.
type sessionJSON struct {
	CSRF          string `json:"csrf,omitempty"`
	By            string `json:"by,omitempty"`
	TokenRequired bool   `json:"token_required"`
	LoggedIn      bool   `json:"logged_in"`
}

// getSession gives the page its session: the cookie (a new one when the
// request has none) and the CSRF token that goes with it. A request
// without the token to a server that needs one is answered too, with
// only that it is not logged in: no cookie, no CSRF token, no name.
func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	id, authed, ok := s.session(r)
	if s.cfg.Token != "" && !(ok && authed) {
		given, right := s.bearer(r)
		if !(given && right) {
			writeJSON(w, http.StatusOK, sessionJSON{TokenRequired: true})
			return
		}
		id, ok = s.setSession(w, true), true
	}
	if !ok {
		id = s.setSession(w, false)
	}
	writeJSON(w, http.StatusOK, sessionJSON{CSRF: s.csrf(id), By: s.cfg.By, TokenRequired: s.cfg.Token != "", LoggedIn: true})
}

// setSession sets a new session cookie and returns its id.
func (s *Server) setSession(w http.ResponseWriter, authed bool) string {
	v := s.newSession(authed)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: v, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return v[:strings.LastIndexByte(v, '.')]
}

// postLogin trades the token for a session cookie.
func (s *Server) postLogin(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Token string `json:"token"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	if s.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(body.Token), []byte(s.cfg.Token)) != 1 {
		s.limit.failed(addrKey(r))
		fail(w, http.StatusUnauthorized, "unauthorized", "wrong token")
		return
	}
	id := s.setSession(w, s.cfg.Token != "")
	writeJSON(w, http.StatusOK, sessionJSON{CSRF: s.csrf(id), By: s.cfg.By, TokenRequired: s.cfg.Token != "", LoggedIn: true})
}

// writeJSON writes v as the response, with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
