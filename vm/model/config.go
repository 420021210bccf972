package model

// This file defines how a step's model is resolved: a model() declaration,
// or the default model from the environment.

import (
	"fmt"
	"net"
	"net/url"

	"github.com/skeinlang/skein/internal/modelinfo"
	"github.com/skeinlang/skein/internal/stubrules"
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
	Name     string // the model() name, "" for the default model
	Model    string // the provider's model id
	Provider string // "" (OpenAI-compatible) or ProviderAnthropic
	BaseURL  string
	// KeyEnv is the variable holding the key; "" sends none.
	KeyEnv          string
	Temperature     *float64
	MaxTokens       int
	ReasoningEffort string
	Reasoning       *bool
	// Answers and AnswersFile are the rules of the offline stub model.
	Answers     []stubrules.Rule
	AnswersFile string
	// Fallbacks are the models asked, in order, when this one fails
	// with a provider error (their own fallbacks are not followed).
	Fallbacks []Config
	// Price prices the model's replies; nil: no cost is counted.
	Price *Price
	// RPM and TPM pace the model's requests and tokens a minute (0: no
	// bound).
	RPM, TPM int
}

// Decl is a model() declaration, as the graph carries it.
type Decl struct {
	Name string
	// Model is the provider's model id.
	Model string
	// Provider is "" (OpenAI-compatible, unless BaseURL is Anthropic's
	// API), ProviderOpenAI or ProviderAnthropic.
	Provider string
	BaseURL  string // "" for the default chain (Anthropic's API for provider anthropic)
	// KeyEnv is the variable holding the key; "" sends none (model()
	// fills in OPENAI_API_KEY or ANTHROPIC_API_KEY when api_key_env is
	// not given).
	KeyEnv          string
	Temperature     *float64
	MaxTokens       int
	ReasoningEffort string
	Reasoning       *bool
	// Answers and AnswersFile (an absolute path) are the rules of the
	// offline stub model (Provider [ProviderStub]).
	Answers     []stubrules.Rule
	AnswersFile string
	// Price, if set, is what the model costs (model(price=)).
	Price *Price
	// RPM and TPM are model(rpm=, tpm=): requests and tokens a minute.
	RPM, TPM int
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
	c := Config{Name: d.Name, Model: d.Model, Provider: ProviderOf(d.Provider, d.BaseURL), BaseURL: d.BaseURL, KeyEnv: d.KeyEnv,
		Temperature: d.Temperature, MaxTokens: d.MaxTokens, ReasoningEffort: d.ReasoningEffort, Reasoning: d.Reasoning,
		Answers: d.Answers, AnswersFile: d.AnswersFile, Price: d.Price, RPM: d.RPM, TPM: d.TPM}
	if c.Provider == ProviderStub {
		c.BaseURL, c.KeyEnv = "", ""
		return c
	}
	if c.BaseURL == "" {
		c.BaseURL = base
		if c.Provider == ProviderAnthropic {
			c.BaseURL = AnthropicBaseURL
		}
	}
	return c
}

// ProviderOf is the provider a model speaks: the declared one, else
// Anthropic's native API when baseURL is Anthropic's host, else
// OpenAI-compatible (""). provider = "openai" keeps a model at Anthropic's
// host on its OpenAI-compatible endpoint.
func ProviderOf(declared, baseURL string) string {
	switch declared {
	case ProviderAnthropic, ProviderStub:
		return declared
	case ProviderOpenAI:
		return ""
	}
	if u, err := url.Parse(baseURL); err == nil && modelinfo.AnthropicHost(u.Hostname()) {
		return ProviderAnthropic
	}
	return ""
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
	if c.Provider == ProviderStub {
		if c.AnswersFile != "" {
			if _, err := ReadAnswers(c.AnswersFile); err != nil {
				return fmt.Errorf("model %s: %v", c.Label(), err)
			}
		}
		return nil
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("model %s: base_url %q is not an http(s) URL", c.Label(), c.BaseURL)
	}
	if c.KeyEnv != "" && getenv(c.KeyEnv) == "" && !loopback(u.Hostname()) {
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
	return Request{Endpoint: Endpoint{BaseURL: c.BaseURL, KeyEnv: c.KeyEnv, Answers: c.Answers, AnswersFile: c.AnswersFile, Fallbacks: c.Fallbacks, Price: c.Price,
		RPM: c.RPM, TPM: c.TPM}, Provider: c.Provider, Model: c.Model,
		Temperature: c.Temperature, MaxTokens: c.MaxTokens, ReasoningEffort: c.ReasoningEffort, Reasoning: c.Reasoning}
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
