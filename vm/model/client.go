package model

// This file defines the Client: one HTTP attempt through a provider's
// official SDK, over an http.Client and a key Skein controls. The SDKs
// build the wire request; what comes back is read here, so that errors,
// retry hints and the recorded body are the same for every provider.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout bounds one attempt of a call whose step gives no
// timeout= (and when [Client.Timeout] is zero). A step's timeout replaces
// it, longer or shorter.
const DefaultTimeout = 10 * time.Minute

// maxBody bounds a response body read into memory.
const maxBody = 8 << 20

// Client sends requests to the provider each names: OpenAI-compatible
// chat completions through github.com/openai/openai-go, Anthropic's
// Messages API through github.com/anthropics/anthropic-sdk-go. Neither SDK
// reads the environment, retries or keeps a key: the key is read from the
// variable the request names at each attempt, retries are [Call]'s. The
// zero value is ready to use; it is safe for concurrent use.
type Client struct {
	HTTP *http.Client // nil: a client with no overall timeout (the context bounds each attempt)
	// Timeout bounds an attempt whose context has no deadline (a step
	// without timeout=); 0: DefaultTimeout.
	Timeout time.Duration
	Getenv  func(key string) string // nil: os.Getenv; read at each request, never kept
}

// exchange is one HTTP round trip as the transport saw it, before an SDK
// read it.
type exchange struct {
	status int
	header http.Header
	body   []byte
	err    error // reading the body
	// streamed: the body is a stream of server-sent events, which the
	// SDK reads (body is nil).
	streamed bool
}

// capture returns middleware (of either SDK: the two types are the same
// function type) that keeps the response of the round trip in *x, its body
// read up to maxBody and handed on to the SDK; a successful reply of
// server-sent events to a request that streams is left to the SDK to read.
func capture(x **exchange, streams bool) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(r *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		resp, err := next(r)
		if err != nil || resp == nil {
			return resp, err
		}
		if streams && resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			*x = &exchange{status: resp.StatusCode, header: resp.Header, streamed: true}
			return resp, nil
		}
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
		resp.Body.Close()
		*x = &exchange{status: resp.StatusCode, header: resp.Header, body: body, err: rerr}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
}

// Complete sends one request to its provider ([ProviderStub]'s is
// answered here, with no request sent). A request with a Stream function
// asks the provider to stream its reply (with the usage at its end), and
// tells the function each piece of text as it comes; what it returns is
// the reply as the provider would have answered without streaming, so a
// cassette records and replays it alike. A server that answers a streamed
// request whole is told whole.
func (c *Client) Complete(ctx context.Context, req Request) (*Reply, error) {
	if req.Provider == ProviderStub {
		rep, err := completeStub(ctx, req)
		streamWhole(req, rep)
		return rep, err
	}
	parent := ctx
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	key := ""
	if req.Endpoint.KeyEnv != "" {
		getenv := c.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		key = getenv(req.Endpoint.KeyEnv)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{}
	}
	var x *exchange
	var rep *Reply
	var err error
	if req.Provider == ProviderAnthropic {
		rep, err = sendAnthropic(ctx, hc, req, key, capture(&x, req.Stream != nil))
	} else {
		rep, err = sendOpenAI(ctx, hc, req, key, capture(&x, req.Stream != nil))
	}
	if x != nil && x.streamed {
		// The stream was read; a failure is the stream's (cut off,
		// cancelled, an error event, a reply that does not add up).
		var me *Error
		switch {
		case err == nil && rep != nil:
			return rep, nil
		case err == nil:
			err = errors.New("no reply")
		case parent.Err() != nil:
			return nil, parent.Err()
		case ctx.Err() != nil:
			return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: no whole reply within %s", req.Model, timeout), Retryable: true}
		case errors.As(err, &me):
			return nil, err
		}
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: the reply's stream broke: %v", req.Model, unwrapSDK(err)), Retryable: true}
	}
	if x == nil {
		switch {
		case parent.Err() != nil:
			return nil, parent.Err()
		case ctx.Err() != nil:
			return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: no reply within %s", req.Model, timeout), Retryable: true}
		case err == nil:
			err = errors.New("no response")
		}
		var bad *badRequestError
		if errors.As(err, &bad) {
			return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: %v", req.Model, bad.err)}
		}
		// A transport error names the URL, never the key (it is in a
		// header).
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: %v", req.Model, unwrapSDK(err)), Retryable: true}
	}
	if x.err != nil {
		if parent.Err() != nil {
			return nil, parent.Err()
		}
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: reading the reply: %v", req.Model, x.err), Retryable: true}
	}
	if len(x.body) > maxBody {
		return nil, &Error{Code: CodeModel, Msg: fmt.Sprintf("model %q: reply larger than %d bytes", req.Model, maxBody)}
	}
	if x.status != http.StatusOK {
		return nil, &Error{Code: CodeModel, Status: x.status,
			Retryable:  x.status == http.StatusTooManyRequests || x.status == http.StatusRequestTimeout || x.status == 529 || x.status >= 500,
			RetryAfter: retryAfter(x.header),
			Msg:        fmt.Sprintf("model %q: HTTP %d%s", req.Model, x.status, errorDetail(x.body))}
	}
	rep, err = parseReply(req, x.body)
	if err == nil {
		streamWhole(req, rep)
	}
	return rep, err
}

// badRequestError is a request the SDK could not be given (a base URL
// that does not parse): sending it again would fail again.
type badRequestError struct{ err error }

func (e *badRequestError) Error() string { return e.err.Error() }

// unwrapSDK returns the innermost error of a transport failure: the SDKs
// wrap it in their own words around the URL error.
func unwrapSDK(err error) error {
	var ue interface{ Timeout() bool }
	if errors.As(err, &ue) {
		if e, ok := ue.(error); ok {
			return e
		}
	}
	return err
}

// parseReply reads a response body of req's provider.
func parseReply(req Request, raw []byte) (*Reply, error) {
	if req.Provider == ProviderAnthropic {
		return ParseAnthropic(req.Model, raw)
	}
	return ParseResponse(req.Model, raw)
}

// errorDetail extracts an API error message from a body, briefly.
func errorDetail(raw []byte) string {
	var w struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &w) == nil && w.Error != nil && w.Error.Message != "" {
		return ": " + clip(w.Error.Message, 300)
	}
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return ""
	}
	return ": " + clip(s, 200)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// retryAfter reads how long a server asks to wait: retry-after-ms
// (OpenAI's and Azure's, in milliseconds), else Retry-After in seconds or
// as an HTTP date.
func retryAfter(h http.Header) time.Duration {
	if ms := strings.TrimSpace(h.Get("Retry-After-Ms")); ms != "" {
		if n, err := strconv.ParseFloat(ms, 64); err == nil && n >= 0 {
			return time.Duration(n * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
