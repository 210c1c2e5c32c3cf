package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"
)

// Defaults of the key subcommands.
const (
	defaultGatewayURL   = "http://127.0.0.1:4000" // serve's default port, on this machine
	defaultMasterKeyEnv = "LITELLM_MASTER_KEY"
	gatewayURLEnv       = "MCPGW_URL"
	keyRequestTimeout   = 30 * time.Second // one management request
)

const keyUsageText = `usage:
  mcpgw key create [--alias A] [--duration 30d] [--team-id T] [--user-id U]
                   [--servers a,b] [--access-groups g1,g2] [--json] [COMMON]
  mcpgw key list   [--team-id T] [--user-id U] [--json] [COMMON]
  mcpgw key revoke [COMMON] KEY...     (KEY: a secret sk-..., a token, or an alias)

COMMON: --url URL (default $MCPGW_URL, else ` + defaultGatewayURL + `)
        --master-key-env NAME (the environment variable holding the master key,
                               default ` + defaultMasterKeyEnv + `)
The key commands call the running gateway's /key/* API with the master key.
`

// keyCommon are the flags every key subcommand takes.
type keyCommon struct {
	url, masterKeyEnv string
}

func (c *keyCommon) register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", "", "the gateway's base URL (env "+gatewayURLEnv+"; default "+defaultGatewayURL+")")
	fs.StringVar(&c.masterKeyEnv, "master-key-env", defaultMasterKeyEnv,
		"name of the environment variable that holds the master key (never given on the command line)")
}

// client builds the API client from the flags and the environment; the error is a usage error.
func (c *keyCommon) client(lookupEnv func(string) (string, bool), stderr io.Writer) (*apiClient, error) {
	base := c.url
	if base == "" {
		base = defaultGatewayURL
		if v, ok := lookupEnv(gatewayURLEnv); ok && v != "" {
			base = v
		}
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("--url %q: want http(s)://host[:port][/path]", base)
	}
	if c.masterKeyEnv == "" {
		return nil, errors.New("--master-key-env: want the name of an environment variable")
	}
	key, _ := lookupEnv(c.masterKeyEnv)
	if key == "" {
		return nil, fmt.Errorf("the master key is read from the environment variable %s, which is not set "+
			"(export it, or name another variable with --master-key-env)", c.masterKeyEnv)
	}
	if u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		fmt.Fprintf(stderr, "mcpgw key: warning: %s is plain http to another host: the master key crosses the network unencrypted\n", u.Host)
	}
	return newAPIClient(strings.TrimSuffix(u.String(), "/"), key), nil
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// runKey runs `mcpgw key SUBCOMMAND ...`.
func runKey(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, keyUsageText)
		return exitUsage
	}
	switch args[0] {
	case "create":
		return runKeyCreate(ctx, args[1:], stdout, stderr, lookupEnv)
	case "list":
		return runKeyList(ctx, args[1:], stdout, stderr, lookupEnv)
	case "revoke":
		return runKeyRevoke(ctx, args[1:], stdout, stderr, lookupEnv)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, keyUsageText)
		return exitOK
	}
	fmt.Fprintf(stderr, "mcpgw key: unknown command %q\n%s", args[0], keyUsageText)
	return exitUsage
}

// keyFlags parses a key subcommand's flags (positional arguments may come between them) and
// builds its client; it returns the exit code to stop with, or -1 to go on.
func keyFlags(fs *flag.FlagSet, common *keyCommon, args []string, wantArgs bool,
	stderr io.Writer, lookupEnv func(string) (string, bool)) (*apiClient, []string, int) {
	common.register(fs)
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, nil, exitOK
			}
			return nil, nil, exitUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		if !wantArgs {
			fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), args[0])
			return nil, nil, exitUsage
		}
		rest, args = append(rest, args[0]), args[1:]
	}
	c, err := common.client(lookupEnv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return nil, nil, exitUsage
	}
	return c, rest, -1
}

// splitList reads a comma-separated flag value; empty entries are dropped.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// runKeyCreate mints a key with /key/generate and prints its secret once.
func runKeyCreate(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := newFlagSet("key create", stderr)
	var common keyCommon
	alias := fs.String("alias", "", "key_alias: a unique name for the key")
	duration := fs.String("duration", "", `lifetime, e.g. "30d", "12h" (s, m, h, d, w, mo); default: never expires`)
	teamID := fs.String("team-id", "", "team_id the key belongs to")
	userID := fs.String("user-id", "", "user_id the key belongs to")
	servers := fs.String("servers", "", "comma-separated MCP servers the key may use (object_permission.mcp_servers)")
	groups := fs.String("access-groups", "", "comma-separated access groups the key may use (object_permission.mcp_access_groups)")
	asJSON := fs.Bool("json", false, "print the API's answer as JSON")
	c, _, code := keyFlags(fs, &common, args, false, stderr, lookupEnv)
	if code >= 0 {
		return code
	}
	defer c.close()
	body := map[string]any{}
	for name, v := range map[string]string{"key_alias": *alias, "duration": *duration, "team_id": *teamID, "user_id": *userID} {
		if v != "" {
			body[name] = v
		}
	}
	perm := map[string][]string{}
	if list := splitList(*servers); list != nil {
		perm["mcp_servers"] = list
	}
	if list := splitList(*groups); list != nil {
		perm["mcp_access_groups"] = list
	}
	if len(perm) > 0 {
		body["object_permission"] = perm
	}
	var out keyAnswer
	raw, err := c.do(ctx, "POST", "/key/generate", body, &out)
	if err != nil {
		fmt.Fprintf(stderr, "mcpgw key create: %v\n", err)
		return exitError
	}
	if *asJSON {
		return printJSON(stdout, stderr, raw)
	}
	fmt.Fprintf(stdout, "key:     %s\ntoken:   %s\nalias:   %s\nexpires: %s\n", out.Key, out.Token, orDash(out.KeyAlias), expiry(out.Expires))
	fmt.Fprintln(stderr, "mcpgw key create: the key is shown this once; the gateway keeps only its hash (the token)")
	return exitOK
}

// printJSON writes raw, indented, to stdout.
func printJSON(stdout, stderr io.Writer, raw json.RawMessage) int {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		fmt.Fprintf(stderr, "mcpgw key: the gateway's answer is not JSON: %v\n", err)
		return exitError
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintln(stdout, string(b))
	return exitOK
}

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

func expiry(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}
