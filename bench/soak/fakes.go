package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// secretNames are environment variables the gateway gets in the stdio-env
// scenario that a stdio upstream has no business seeing.
func secretNames() []string {
	return []string{"LITELLM_SALT_KEY", "LITELLM_MASTER_KEY", "OPENAI_API_KEY", "SOAK_CANARY_SECRET", "MCPGW_SOAK_DEBUG_ADDR"}
}

// rpcIn is the part of an incoming JSON-RPC message the fakes look at.
type rpcIn struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name            string `json:"name"`
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"params"`
}

func rpcResult(id json.RawMessage, result string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`)
}

func rpcError(id json.RawMessage, code int, msg string) []byte {
	return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%q}}`, id, code, msg))
}

func textResult(text string) string {
	b, _ := json.Marshal(text)
	return `{"content":[{"type":"text","text":` + string(b) + `}]}`
}

const initResult = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"soak-fake","version":"1"}}`

// runStdioServer is a minimal stdio MCP server (2025-11-25). Its tool "env"
// names which of secretNames it sees in its environment; its tool "garbage"
// starts writing non-JSON lines on stdout for -garbage-for. It exits on
// stdin's EOF or after -life.
func runStdioServer(args []string) int {
	fs := flag.NewFlagSet("stdio-server", flag.ContinueOnError)
	garbageFor := fs.Duration("garbage-for", 10*time.Second, "how long the garbage tool writes garbage")
	life := fs.Duration("life", 3*time.Minute, "exit after this long whatever happens")
	if fs.Parse(args) != nil {
		return 2
	}
	time.AfterFunc(*life, func() { os.Exit(0) })
	var mu sync.Mutex
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	send := func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		out.Write(b)
		out.WriteByte('\n')
		out.Flush()
	}
	var garbageOnce sync.Once
	garbage := func() {
		chunk := bytes.Repeat([]byte("garbage\n"), 8<<10)
		end := time.Now().Add(*garbageFor)
		for time.Now().Before(end) {
			mu.Lock()
			_, err := os.Stdout.Write(chunk)
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var m rpcIn
		if json.Unmarshal(sc.Bytes(), &m) != nil || len(m.ID) == 0 || m.Method == "" {
			continue // notifications and answers
		}
		switch m.Method {
		case "initialize":
			send(rpcResult(m.ID, initResult))
		case "ping":
			send(rpcResult(m.ID, `{}`))
		case "tools/list":
			send(rpcResult(m.ID, `{"tools":[{"name":"env","description":"which gateway secrets this process sees","inputSchema":{"type":"object"}},`+
				`{"name":"garbage","description":"writes garbage on stdout","inputSchema":{"type":"object"}}]}`))
		case "tools/call":
			if m.Params.Name == "garbage" {
				send(rpcResult(m.ID, textResult("garbage follows")))
				garbageOnce.Do(func() { go garbage() })
				continue
			}
			var seen []string
			for _, n := range secretNames() {
				if _, ok := os.LookupEnv(n); ok {
					seen = append(seen, n)
				}
			}
			send(rpcResult(m.ID, textResult(fmt.Sprintf("seen=%s;vars=%d", strings.Join(seen, ","), len(os.Environ())))))
		default:
			send(rpcError(m.ID, -32601, "method not found"))
		}
	}
	return 0
}

// fakeUpstream is a hostile 2025-11-25 streamable-HTTP upstream. Its tool
// "flood" answers with floodN server→client roots/list requests on the
// call's SSE stream before the result; its tool "big" answers bigBytes of
// text in one JSON response.
type fakeUpstream struct {
	url      string
	srv      *http.Server
	floodN   int
	bigText  []byte // the big answer's text, JSON-escaped already
	answers  atomic.Int64
	floodOut atomic.Int64
}

func startFake(floodN, bigBytes int) (*fakeUpstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &fakeUpstream{url: "http://" + ln.Addr().String() + "/mcp", floodN: floodN}
	if bigBytes > 0 {
		f.bigText = bytes.Repeat([]byte("x"), bigBytes)
	}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

func (f *fakeUpstream) close() { _ = f.srv.Close() }

// dropIdle closes the fake's idle keep-alive connections, so the gateway's
// (bounded) pool of idle upstream connections does not count as held.
func (f *fakeUpstream) dropIdle() { f.srv.SetKeepAlivesEnabled(false) }

func (f *fakeUpstream) serve(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodDelete:
		return
	case http.MethodPost:
	default:
		http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
		return
	}
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var m rpcIn
	if json.Unmarshal(raw, &m) != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	if m.Method == "" {
		f.answers.Add(1) // an answer to one of our requests
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if len(m.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case m.Method == "initialize":
		w.Header().Set("Mcp-Session-Id", "soak-"+randHex(8))
		w.Write(rpcResult(m.ID, initResult))
	case m.Method == "ping":
		w.Write(rpcResult(m.ID, `{}`))
	case m.Method == "tools/list":
		w.Write(rpcResult(m.ID, `{"tools":[{"name":"flood","inputSchema":{"type":"object"}},{"name":"big","inputSchema":{"type":"object"}}]}`))
	case m.Method == "tools/call" && m.Params.Name == "flood":
		f.flood(w, r, m.ID)
	case m.Method == "tools/call" && m.Params.Name == "big":
		f.big(w, m.ID)
	default:
		w.Write(rpcError(m.ID, -32601, "method not found"))
	}
}

// flood sends floodN roots/list requests on the call's stream (within 50 s),
// then the call's result.
func (f *fakeUpstream) flood(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	bw := bufio.NewWriterSize(w, 64<<10)
	end := time.Now().Add(50 * time.Second)
	for i := 0; i < f.floodN && r.Context().Err() == nil && time.Now().Before(end); i++ {
		fmt.Fprintf(bw, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"r%d\",\"method\":\"roots/list\"}\n\n", i)
		f.floodOut.Add(1)
		if i%256 == 255 {
			if bw.Flush() != nil || rc.Flush() != nil {
				return
			}
		}
	}
	fmt.Fprintf(bw, "event: message\ndata: %s\n\n", rpcResult(id, textResult("flood done")))
	_ = bw.Flush()
	_ = rc.Flush()
}

// big answers one JSON response whose text is len(bigText) bytes.
func (f *fakeUpstream) big(w http.ResponseWriter, id json.RawMessage) {
	head := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"`
	tail := `"}]}}`
	w.Header().Set("Content-Length", fmt.Sprint(len(head)+len(f.bigText)+len(tail)))
	io.WriteString(w, head)
	w.Write(f.bigText)
	io.WriteString(w, tail)
}
