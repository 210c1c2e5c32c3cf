package ui

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestUILiveLogShowsNamesNotArgumentsAndEndsOnBlock: the live log streams a call as it ends,
// with its tool name and caller but never its arguments, and the stream of a session whose key
// is blocked ends within the re-check interval.
func TestUILiveLogShowsNamesNotArgumentsAndEndsOnBlock(t *testing.T) {
	g, _ := startGateway(t, nil)
	if s, b := g.api(t, masterKey, "POST", "/user/new", `{"user_id":"boss","user_role":"proxy_admin"}`); s != 200 {
		t.Fatalf("/user/new = %d %s", s, b)
	}
	admin, token := g.generateKey(t, `{"user_id":"boss","key_alias":"boss-key"}`)
	b, status := g.signIn(t, admin)
	if status != http.StatusSeeOther {
		t.Fatalf("sign-in = %d", status)
	}
	req, err := http.NewRequest("GET", g.url+"/ui/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Cookie", "mcpgw_ui="+b.cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /ui/events = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	const argMarker = "ARGUMENT-MARKER-5d1c"
	if s, body := b.post(t, "/ui/api/mcp-rest/tools/call",
		`{"server_id":"secretive","name":"test_x_mcp_header","arguments":{"region":"`+argMarker+`"}}`, b.sameOriginHeaders()); s != 200 {
		t.Fatalf("tools/call = %d %s", s, body)
	}
	timeout := time.After(10 * time.Second)
	for found := false; !found; {
		select {
		case l, open := <-lines:
			if !open {
				t.Fatal("the stream ended before the call arrived")
			}
			if strings.Contains(l, argMarker) {
				t.Fatalf("the live log carries an argument: %s", l)
			}
			found = strings.HasPrefix(l, "data: ") && strings.Contains(l, `"target":"test_x_mcp_header"`) && strings.Contains(l, `"caller":"boss-key"`)
		case <-timeout:
			t.Fatal("the call did not arrive on the live log")
		}
	}
	if s, body := g.api(t, masterKey, "POST", "/key/block", `{"key":"`+token+`"}`); s != 200 {
		t.Fatalf("/key/block = %d %s", s, body)
	}
	ended := time.After(15 * time.Second)
	for {
		select {
		case _, open := <-lines:
			if !open {
				return
			}
		case <-ended:
			t.Fatal("the blocked key's live log is still open after 15 s")
		}
	}
}
