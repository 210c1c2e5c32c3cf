package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
)

// listPageSize is the page size the list command asks for (the API's maximum).
const listPageSize = 100

// listPage is one /key/list answer with return_full_object=true.
type listPage struct {
	Keys       []json.RawMessage `json:"keys"`
	TotalCount int               `json:"total_count"`
	TotalPages int               `json:"total_pages"`
}

// listKeys reads every page of /key/list for the filters in q (full objects).
func listKeys(ctx context.Context, c *apiClient, q url.Values) ([]json.RawMessage, error) {
	q.Set("return_full_object", "true")
	q.Set("size", strconv.Itoa(listPageSize))
	var all []json.RawMessage
	for page := 1; ; page++ {
		q.Set("page", strconv.Itoa(page))
		var p listPage
		if _, err := c.do(ctx, "GET", "/key/list?"+q.Encode(), nil, &p); err != nil {
			return nil, err
		}
		all = append(all, p.Keys...)
		if page >= p.TotalPages || len(p.Keys) == 0 {
			return all, nil
		}
	}
}

// runKeyList prints the keys (filtered by team or user) as a table, or as JSON.
func runKeyList(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := newFlagSet("key list", stderr)
	var common keyCommon
	teamID := fs.String("team-id", "", "only the keys of this team_id")
	userID := fs.String("user-id", "", "only the keys of this user_id")
	asJSON := fs.Bool("json", false, "print the key objects as a JSON array")
	c, _, code := keyFlags(fs, &common, args, false, stderr, lookupEnv)
	if code >= 0 {
		return code
	}
	defer c.close()
	q := url.Values{}
	if *teamID != "" {
		q.Set("team_id", *teamID)
	}
	if *userID != "" {
		q.Set("user_id", *userID)
	}
	raws, err := listKeys(ctx, c, q)
	if err != nil {
		fmt.Fprintf(stderr, "mcpgw key list: %v\n", err)
		return exitError
	}
	if *asJSON {
		b, _ := json.Marshal(raws)
		return printJSON(stdout, stderr, b)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOKEN\tALIAS\tTEAM\tUSER\tEXPIRES\tBLOCKED")
	for _, raw := range raws {
		var k keyAnswer
		if err := json.Unmarshal(raw, &k); err != nil {
			fmt.Fprintf(stderr, "mcpgw key list: a key in the answer is not a key object: %v\n", err)
			return exitError
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\n", tokenPrefix(k.Token), orDash(k.KeyAlias), orDash(k.TeamID),
			orDash(k.UserID), expiry(k.Expires), k.Blocked)
	}
	_ = tw.Flush()
	return exitOK
}

// tokenPrefix shortens a token for display (enough to tell keys apart and to grep for).
func tokenPrefix(token string) string {
	if len(token) > 12 {
		return token[:12]
	}
	return token
}

// isToken reports whether ref is a key's token: 64 lower-case hex digits.
func isToken(ref string) bool {
	_, err := hex.DecodeString(ref)
	return len(ref) == 64 && err == nil && strings.ToLower(ref) == ref
}

// runKeyRevoke deletes the keys named by secret, token or alias, all or none: every alias is
// resolved first (an unknown alias deletes nothing), then one /key/delete removes them all.
func runKeyRevoke(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := newFlagSet("key revoke", stderr)
	var common keyCommon
	c, refs, code := keyFlags(fs, &common, args, true, stderr, lookupEnv)
	if code >= 0 {
		return code
	}
	defer c.close()
	if len(refs) == 0 {
		fmt.Fprintln(stderr, "mcpgw key revoke: name at least one key (a secret sk-..., a token, or an alias)")
		return exitUsage
	}
	keys := make([]string, 0, len(refs))
	for _, ref := range refs {
		if strings.HasPrefix(ref, "sk-") || isToken(ref) {
			keys = append(keys, ref)
			continue
		}
		raws, err := listKeys(ctx, c, url.Values{"key_alias": {ref}})
		if err != nil {
			fmt.Fprintf(stderr, "mcpgw key revoke: resolving alias %q: %v\n", ref, err)
			return exitError
		}
		var k keyAnswer
		if len(raws) != 1 || json.Unmarshal(raws[0], &k) != nil || k.Token == "" {
			fmt.Fprintf(stderr, "mcpgw key revoke: no key has the alias %q; nothing was revoked\n", ref)
			return exitError
		}
		keys = append(keys, k.Token)
	}
	var out struct {
		Deleted []string `json:"deleted_keys"`
	}
	if _, err := c.do(ctx, "POST", "/key/delete", map[string]any{"keys": keys}, &out); err != nil {
		fmt.Fprintf(stderr, "mcpgw key revoke: %v; nothing was revoked\n", err)
		return exitError
	}
	for _, t := range out.Deleted {
		fmt.Fprintf(stdout, "revoked %s\n", t)
	}
	return exitOK
}
