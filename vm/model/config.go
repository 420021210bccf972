package model

// This file defines how a step's model is resolved: a model() declaration,
// or the default model from the environment.

import (
	"fmt"
	"net"
	"net/url"
)

// Environment variables of the default model.
const (
	EnvModel      = "SKEIN_MODEL"
	EnvBaseURL    = "SKEIN_BASE_URL"
	EnvOpenAIBase = "OPENAI_BASE_URL"
	EnvKey        = "OPENAI_API_KEY"
)

// Config is a resolved model: what a request names and where it goes.
type Config struct {
	Name        string // the model() name, "" for the default model
	Model       string // the provider's model id
	BaseURL     string
	KeyEnv      string
	Temperature *float64
	MaxTokens   int
}

// Decl is a model() declaration, as the graph carries it.
type Decl struct {
	Name        string
	Model       string
	BaseURL     string // "" for the default chain
	KeyEnv      string // "" for OPENAI_API_KEY
	Temperature *float64
	MaxTokens   int
}

// Resolve returns the configuration for d, or for the default model when d
// is nil, reading getenv for what is not declared.
func Resolve(d *Decl, getenv func(string) string) Config {
	base := getenv(EnvBaseURL)
	if base == "" {
		base = getenv(EnvOpenAIBase)
	}
	if base == "" {
		base = DefaultBaseURL
	}
	if d == nil {
		return Config{Model: getenv(EnvModel), BaseURL: base, KeyEnv: EnvKey}
	}
	c := Config{Name: d.Name, Model: d.Model, BaseURL: d.BaseURL, KeyEnv: d.KeyEnv, Temperature: d.Temperature, MaxTokens: d.MaxTokens}
	if c.BaseURL == "" {
		c.BaseURL = base
	}
	if c.KeyEnv == "" {
		c.KeyEnv = EnvKey
	}
	return c
}

// Usable reports what is missing before c can be called: a model id (for
// the default model, $SKEIN_MODEL), a base URL that parses, and the key's
// variable, unless the server is on this machine (Ollama, llama.cpp's
// server and LM Studio need no key).
func (c Config) Usable(getenv func(string) string) error {
	if c.Model == "" {
		if c.Name == "" {
			return fmt.Errorf("no model configured: set %s to a model id (with %s for its key, and %s for a server other than OpenAI), or declare one with model()", EnvModel, EnvKey, EnvBaseURL)
		}
		return fmt.Errorf("model %q names no model id", c.Name)
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("model %s: base_url %q is not an http(s) URL", c.Label(), c.BaseURL)
	}
	if getenv(c.KeyEnv) == "" && !loopback(u.Hostname()) {
		return fmt.Errorf("model %s at %s: set %s to its API key", c.Label(), c.BaseURL, c.KeyEnv)
	}
	return nil
}

// Label names c in messages: the declared name, else the model id.
func (c Config) Label() string {
	if c.Name != "" {
		return fmt.Sprintf("%q (%s)", c.Name, c.Model)
	}
	return fmt.Sprintf("%q", c.Model)
}

// Request returns an empty request for c.
func (c Config) Request() Request {
	return Request{Endpoint: Endpoint{BaseURL: c.BaseURL, KeyEnv: c.KeyEnv}, Model: c.Model, Temperature: c.Temperature, MaxTokens: c.MaxTokens}
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
