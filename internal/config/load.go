package config

import (
	"bytes"
	"errors"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// parse turns the file into a Config, recording problems; the result is meaningful only when no
// problem is an error.
func (l *loader) parse(data []byte) *Config {
	cfg := &Config{
		General: GeneralSettings{
			MCPAdvertisedVersions: DefaultAdvertisedVersions(),
			MCPScopedPrefix:       true,
			HTTP:                  DefaultHTTPLimits(),
			MaxListenersPerCaller: DefaultMaxListenersPerCaller,
			Health:                DefaultHealthSettings(),
		},
	}
	root, ok := l.document(data)
	if !ok {
		return nil
	}
	if root == nil {
		return cfg // empty: warned
	}
	l.sections(root, cfg)
	return cfg
}

// document decodes data's first YAML document and returns its top-level
// mapping: nil with ok for an empty file (warned), ok false for a file that
// cannot be a config (the error recorded).
func (l *loader) document(data []byte) (root *yaml.Node, ok bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			l.warnf(nil, "the config file is empty")
			return nil, true
		}
		l.syntaxError(err)
		return nil, false
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		l.warnf(&extra, "only the first YAML document in the file is used")
	} else if !errors.Is(err, io.EOF) {
		l.syntaxError(err)
		return nil, false
	}

	root = &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			l.warnf(root, "the config file is empty")
			return nil, true
		}
		root = root.Content[0]
	}
	if isNull(root) {
		l.warnf(root, "the config file is empty")
		return nil, true
	}
	if d := deref(root); d.Kind != yaml.MappingNode {
		l.errorf(root, "the config file must be a mapping with keys such as mcp_servers, not a %s", kindName(d))
		return nil, false
	}
	return root, true
}

// sections reads the top-level keys of root into cfg, then validates it.
func (l *loader) sections(root *yaml.Node, cfg *Config) {
	top := l.entries(root, "the config file", "top-level key")
	// environment_variables first: every other section may refer to them.
	for _, e := range top {
		if e.key == "environment_variables" {
			cfg.EnvironmentVariables = l.envVars(e.v)
		}
	}
	l.fileEnv = cfg.EnvironmentVariables
	var serversNode, samplingNode, routerNode *yaml.Node
	for _, e := range top {
		switch e.key {
		case "environment_variables":
		case "model_list":
			cfg.Models = l.models(e.v)
		case "mcp_servers":
			serversNode = e.k
			cfg.Servers = l.servers(e.v)
		case "general_settings":
			l.general(e.v, &cfg.General)
		case "litellm_settings":
			samplingNode = l.litellm(e.v, &cfg.LiteLLM)
		case "router_settings":
			routerNode = e.v
		case "guardrails":
			cfg.Guardrails = l.guardrails(e.v)
		default:
			l.warnf(e.k, "top-level key %q is not used by mcpgw (ignored)%s", e.key, didYouMean(e.key, topLevelKeys))
		}
	}
	// cache_params first: where both name the connection, it wins over router_settings.
	if l.cacheParamsNode != nil {
		l.cacheParams(l.cacheParamsNode, &cfg.Redis)
	}
	if routerNode != nil {
		l.routerSettings(routerNode, &cfg.Redis)
	}
	l.publicURLEnv(&cfg.General.Public)
	l.jwtAuthEnv(&cfg.General.JWT)
	l.checkGuardrailRefs(cfg)
	l.validate(cfg, serversNode, samplingNode)
}

// syntaxError records a YAML parse error at the line the parser names.
func (l *loader) syntaxError(err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, after, ok := strings.Cut(rest, ": "); ok {
			if n, cerr := strconv.Atoi(num); cerr == nil && n > 0 {
				line, msg = n, after
			}
		}
	}
	l.problems = append(l.problems, Problem{Line: line, Severity: SeverityError, Msg: "invalid YAML: " + msg})
}

// envVars reads environment_variables; their own os.environ/ references use only the outside
// environment.
func (l *loader) envVars(n *yaml.Node) map[string]string {
	es := l.entries(n, "environment_variables", "variable")
	out := make(map[string]string, len(es))
	for _, e := range es {
		if isNull(e.v) {
			out[e.key] = ""
			continue
		}
		if s, ok := l.str(e.v, "environment_variables."+e.key); ok {
			out[e.key] = s
		}
	}
	return out
}

func (l *loader) models(n *yaml.Node) []Model {
	if isNull(n) {
		return nil
	}
	d := deref(n)
	if d.Kind != yaml.SequenceNode {
		l.errorf(n, "model_list must be a list, not a %s", kindName(d))
		return nil
	}
	var out []Model
	for i, item := range d.Content {
		field := "model_list[" + strconv.Itoa(i) + "]"
		m := Model{Line: lineOf(item)}
		es := l.entries(item, field, "key")
		if !isNull(item) && deref(item).Kind != yaml.MappingNode {
			continue
		}
		for _, e := range es {
			switch e.key {
			case "model_name":
				m.ModelName, _ = l.str(e.v, field+".model_name")
			case "litellm_params":
				l.modelParams(e.v, field+".litellm_params", &m.Params)
			default:
				l.warnf(e.k, "key %q in %s is not used by mcpgw (ignored)%s", e.key, field, didYouMean(e.key, modelKeys))
			}
		}
		if m.ModelName == "" {
			l.errorf(item, "%s has no model_name", field)
		}
		out = append(out, m)
	}
	return out
}

func (l *loader) modelParams(n *yaml.Node, field string, p *ModelParams) {
	for _, e := range l.entries(n, field, "key") {
		switch e.key {
		case "model":
			p.Model, _ = l.str(e.v, field+".model")
		case "api_base":
			if s, ok := l.str(e.v, field+".api_base"); ok {
				p.APIBase = s
				if s != "" && !isHTTPURL(s) {
					l.errorf(e.v, "%s.api_base must be an absolute http(s) URL", field)
				}
			}
		case "api_key":
			s, _ := l.str(e.v, field+".api_key")
			p.APIKey = Secret(s)
		default:
			l.warnf(e.k, "key %q in %s is not used by mcpgw (ignored)%s", e.key, field, didYouMean(e.key, modelParamKeys))
		}
	}
}

func (l *loader) general(n *yaml.Node, g *GeneralSettings) {
	const sec = "general_settings"
	for _, e := range l.entries(n, sec, "key") {
		field := sec + "." + e.key
		switch e.key {
		case "master_key":
			s, _ := l.str(e.v, field)
			g.MasterKey = Secret(s)
			g.MasterKeyLine = lineOf(e.v)
			if s != "" && !strings.HasPrefix(s, "sk-") {
				l.warnf(e.v, "%s should start with \"sk-\" (LiteLLM requires it)", field)
			}
		case "custom_auth":
			s, ok := l.str(e.v, field)
			if !ok {
				continue
			}
			if !isHTTPURL(s) {
				l.errorf(e.v, "%s must be an http(s):// URL of an auth webhook; Python module paths are not supported", field)
				continue
			}
			g.CustomAuth = s
		case "mcp_advertised_versions":
			g.MCPAdvertisedVersions = l.advertised(e.k, e.v, field)
		case "database_url":
			s, _ := l.str(e.v, field)
			g.DatabaseURL = Secret(s)
		case "redis_failure_mode":
			l.redisFailureMode(e, field, g)
		case "store_model_in_db":
			g.StoreModelInDB, _ = l.boolean(e.v, field)
		case "require_key_mcp_access_defined":
			g.RequireKeyMCPAccessDefined, _ = l.boolean(e.v, field)
		case "require_end_user_mcp_access_defined":
			g.RequireEndUserMCPAccessDefined, _ = l.boolean(e.v, field)
		case "mcp_access_log":
			if b, ok := l.boolean(e.v, field); ok {
				g.NoAccessLog = !b
			}
		case "maximum_spend_logs_retention_period":
			g.SpendLogsRetention, _ = l.str(e.v, field)
		case "maximum_spend_logs_retention_interval":
			g.SpendLogsRetentionInterval, _ = l.str(e.v, field)
		case "mcp_allow_all_keys_respects_mcp_scope":
			g.MCPAllowAllKeysRespectsScope, _ = l.boolean(e.v, field)
		case "mcp_scoped_prefix":
			if b, ok := l.boolean(e.v, field); ok {
				g.MCPScopedPrefix = b
			}
		case "allowed_hosts":
			g.AllowedHosts = l.hostList(e.v, field)
		case "allowed_origins":
			g.AllowedOrigins = l.originList(e.v, field)
		case "mcp_policies":
			g.MCPPolicies = l.policies(e.v, field)
		case "max_listeners_per_caller":
			if v, ok := l.nonNegInt(e.v, field); ok {
				if v <= 0 {
					l.errorf(e.v, "%s must be a positive whole number", field)
					continue
				}
				g.MaxListenersPerCaller = v
			}
		default:
			if !l.httpLimit(e, field, &g.HTTP) && !l.healthKey(e, field, &g.Health) && !l.identityKey(e, field, &g.Identity) &&
				!l.publicURLKey(e, field, &g.Public) && !l.jwtAuthKey(e, field, &g.JWT) {
				l.warnf(e.k, "key %q in %s is not used by mcpgw (ignored)%s", e.key, sec, didYouMean(e.key, generalKeys))
			}
		}
	}
}

// httpLimit reads one of the HTTPLimits keys; false when e is not one.
func (l *loader) httpLimit(e entry, field string, h *HTTPLimits) bool {
	durations := map[string]*time.Duration{
		"http_read_header_timeout": &h.ReadHeaderTimeout,
		"http_read_timeout":        &h.ReadTimeout,
		"http_write_timeout":       &h.WriteTimeout,
		"http_idle_timeout":        &h.IdleTimeout,
	}
	if dst, ok := durations[e.key]; ok {
		if d, ok := l.seconds(e.v, field); ok {
			if d <= 0 {
				l.errorf(e.v, "%s must be a positive number of seconds", field)
				return true
			}
			*dst = d
		}
		return true
	}
	var n int
	switch e.key {
	case "http_max_header_bytes", "max_request_body_bytes", "max_connections", "max_inflight_requests":
		v, ok := l.nonNegInt(e.v, field)
		if !ok {
			return true
		}
		if v <= 0 {
			l.errorf(e.v, "%s must be a positive whole number", field)
			return true
		}
		n = v
	default:
		return false
	}
	switch e.key {
	case "http_max_header_bytes":
		h.MaxHeaderBytes = n
	case "max_request_body_bytes":
		h.MaxRequestBodyBytes = int64(n)
	case "max_connections":
		h.MaxConnections = n
	case "max_inflight_requests":
		h.MaxInflightRequests = n
	}
	return true
}

// hostList reads allowed_hosts: host names (no scheme, port or path), "*.suffix" wildcards allowed.
func (l *loader) hostList(n *yaml.Node, field string) []string {
	var out []string
	for i, h := range l.strList(n, field) {
		h = strings.ToLower(strings.TrimSpace(h))
		bare := strings.TrimPrefix(h, "*.")
		if bare == "" || strings.ContainsAny(bare, "*/:@ ") && !strings.HasPrefix(bare, "[") {
			l.errorf(itemNode(n, i), "%s[%d] must be a host name such as gw.example.com or *.example.com", field, i)
			continue
		}
		out = append(out, h)
	}
	return out
}

// originList reads allowed_origins: scheme://host[:port] with no path.
func (l *loader) originList(n *yaml.Node, field string) []string {
	var out []string
	for i, o := range l.strList(n, field) {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
			l.errorf(itemNode(n, i), "%s[%d] must be an origin such as https://app.example.com", field, i)
			continue
		}
		out = append(out, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	return out
}

// itemNode returns the i-th item of a sequence node, or n.
func itemNode(n *yaml.Node, i int) *yaml.Node {
	if d := deref(n); d != nil && d.Kind == yaml.SequenceNode && i < len(d.Content) {
		return d.Content[i]
	}
	return n
}

func (l *loader) advertised(k, v *yaml.Node, field string) []string {
	if isNull(v) {
		return DefaultAdvertisedVersions()
	}
	list := l.strList(v, field)
	if deref(v).Kind != yaml.SequenceNode {
		return DefaultAdvertisedVersions()
	}
	var out []string
	d := deref(v)
	for i, s := range list {
		at := v
		if i < len(d.Content) {
			at = d.Content[i]
		}
		s = strings.TrimSpace(s)
		switch {
		case !isKnownRevision(s):
			l.errorf(at, "%s: unknown protocol revision %q (known: %s)", field, s, strings.Join(KnownRevisions(), ", "))
		case slices.Contains(out, s):
			l.warnf(at, "%s lists %q twice", field, s)
		default:
			out = append(out, s)
		}
	}
	if len(list) == 0 {
		l.errorf(k, "%s must list at least one protocol revision", field)
	}
	if len(out) == 0 {
		return DefaultAdvertisedVersions()
	}
	return out
}

// litellm reads litellm_settings and returns the node of default_mcp_sampling_model, if any.
func (l *loader) litellm(n *yaml.Node, s *LiteLLMSettings) *yaml.Node {
	const sec = "litellm_settings"
	var at *yaml.Node
	for _, e := range l.entries(n, sec, "key") {
		switch e.key {
		case "default_mcp_sampling_model":
			if v, ok := l.str(e.v, sec+"."+e.key); ok {
				s.DefaultMCPSamplingModel = strings.TrimSpace(v)
				at = e.v
			}
		case "mcp_aliases":
			s.MCPAliases, l.aliasNodes = l.strMap(e.v, sec+"."+e.key)
		case "callbacks":
			// A list, as LiteLLM documents it; one name alone is taken too.
			for _, c := range l.scopes(e.v, sec+"."+e.key) {
				s.Callbacks = append(s.Callbacks, strings.ToLower(strings.Trim(c, ",")))
			}
		case "cache_params":
			l.cacheParamsNode = e.v
		case "cache":
			// LiteLLM's switch for its response cache; cache_params alone names the Redis.
		case "require_auth_for_metrics_endpoint":
			if b, ok := l.boolean(e.v, sec+"."+e.key); ok {
				s.Metrics.Public = !b
			}
		case "prometheus_metrics_config":
			l.prometheusMetricsConfig(e.v, sec+"."+e.key, &s.Metrics)
		default:
			l.warnf(e.k, "key %q in %s is not used by mcpgw (ignored)%s", e.key, sec, didYouMean(e.key, litellmKeys))
		}
	}
	return at
}
