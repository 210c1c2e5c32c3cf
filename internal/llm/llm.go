package llm

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds one provider call when Config.Timeout is zero.
const DefaultTimeout = 60 * time.Second

// MaxResponseBytes caps how much of a provider response is read.
const MaxResponseBytes = 4 << 20

// openAIBase is the api_base used for OpenAI models configured without one.
const openAIBase = "https://api.openai.com/v1"

// Model is one model_list entry usable for sampling.
type Model struct {
	// Name is model_name: what hints and default_mcp_sampling_model refer to.
	Name string
	// Provider is litellm_params.model, e.g. "openai/gpt-4o-mini"; the part after the first "/" is sent as the model id.
	Provider string
	// APIBase is the OpenAI-compatible base URL, e.g. "http://host/v1"; requests go to {APIBase}/chat/completions.
	APIBase string
	// APIKey is sent as "Authorization: Bearer <APIKey>" when non-empty.
	APIKey string
}

// String describes the model without its key.
func (m Model) String() string { return m.Name + " (" + m.Provider + ")" }

// GoString keeps the key out of %#v output.
func (m Model) GoString() string {
	return fmt.Sprintf("llm.Model{Name:%q, Provider:%q, APIBase:%q, APIKey:[redacted]}", m.Name, m.Provider, m.APIBase)
}

// ProviderModel returns the model id sent to the provider: Provider after its first "/", or all of it.
func (m Model) ProviderModel() string {
	if _, after, ok := strings.Cut(m.Provider, "/"); ok {
		return after
	}
	return m.Provider
}

// Config configures a Sampler.
type Config struct {
	// Models is model_list, in file order (the first is the last-resort choice).
	Models []Model
	// Default is litellm_settings.default_mcp_sampling_model; when set it must name a model.
	Default string
	// HTTPClient makes the provider calls; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Timeout bounds each provider call; zero or negative means DefaultTimeout.
	Timeout time.Duration
	// Logger receives one record per provider call (never prompts, answers or keys); nil discards.
	Logger *slog.Logger
}

// Sampler fulfils sampling/createMessage requests; it is immutable and safe for concurrent use.
type Sampler struct {
	models  []model
	def     int // index into models, or -1
	client  *http.Client
	timeout time.Duration
	log     *slog.Logger
}

// model is a validated Model with its endpoint precomputed.
type model struct {
	Model
	endpoint string // POST target; "" when unusable
	unusable string // why the model cannot be called, or ""
}

// New validates cfg and returns a Sampler.
func New(cfg Config) (*Sampler, error) {
	s := &Sampler{
		models:  make([]model, 0, len(cfg.Models)),
		def:     -1,
		client:  cfg.HTTPClient,
		timeout: cfg.Timeout,
		log:     cfg.Logger,
	}
	if s.client == nil {
		s.client = http.DefaultClient
	}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for i, m := range cfg.Models {
		if m.Name == "" {
			return nil, fmt.Errorf("llm: model_list[%d] has no model_name", i)
		}
		ep, err := endpoint(m)
		if err != nil {
			return nil, fmt.Errorf("llm: model %q: %w", m.Name, err)
		}
		mm := model{Model: m, endpoint: ep}
		switch {
		case m.ProviderModel() == "":
			mm.unusable = "litellm_params.model names no model"
		case ep == "":
			mm.unusable = "it has no api_base and its provider has no known default"
		}
		s.models = append(s.models, mm)
	}
	if cfg.Default != "" {
		for i, m := range s.models {
			if m.Name == cfg.Default {
				s.def = i
				break
			}
		}
		if s.def < 0 {
			return nil, fmt.Errorf("llm: default_mcp_sampling_model %q names no model_list entry", cfg.Default)
		}
	}
	return s, nil
}

// endpoint returns the chat completions URL for m, or "" when m has no api_base and no known default.
func endpoint(m Model) (string, error) {
	base := m.APIBase
	if base == "" {
		prefix, _, ok := strings.Cut(m.Provider, "/")
		if ok && prefix != "openai" {
			return "", nil
		}
		base = openAIBase
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", errors.New("api_base is not a valid URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", errors.New("api_base must be an http or https URL")
	}
	if u.Host == "" {
		return "", errors.New("api_base has no host")
	}
	u.Fragment, u.RawFragment = "", ""
	u.Path = strings.TrimSuffix(u.Path, "/") + "/chat/completions"
	u.RawPath = ""
	return u.String(), nil
}

// Resolve chooses the model for the given hint names, following LiteLLM's order without priority scoring.
func (s *Sampler) Resolve(hints []string) (Model, error) {
	m, err := s.resolve(hints)
	if err != nil {
		return Model{}, err
	}
	return m.Model, nil
}

func (s *Sampler) resolve(hints []string) (*model, error) {
	for _, h := range hints {
		if h == "" {
			continue
		}
		for i := range s.models {
			if s.models[i].Name == h {
				return &s.models[i], nil
			}
		}
		lh := strings.ToLower(h)
		for i := range s.models {
			if strings.Contains(strings.ToLower(s.models[i].Name), lh) {
				return &s.models[i], nil
			}
		}
	}
	if s.def >= 0 {
		return &s.models[s.def], nil
	}
	if len(s.models) > 0 {
		return &s.models[0], nil
	}
	return nil, ErrNoModel
}
