// Command hello-server is a tiny MCP server over stdio, used by examples/quickstart.yaml.
//
// It offers the tools echo {message} and add {a, b}, the prompt greet {name} and the text
// resource hello://world.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// echoArgs are the arguments of the echo tool.
type echoArgs struct {
	Message string `json:"message" jsonschema:"the text to echo back"`
}

// addArgs are the arguments of the add tool.
type addArgs struct {
	A float64 `json:"a" jsonschema:"the first addend"`
	B float64 `json:"b" jsonschema:"the second addend"`
}

// addResult is the structured result of the add tool.
type addResult struct {
	Sum float64 `json:"sum"`
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
}

func add(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, addResult, error) {
	sum := in.A + in.B
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("The sum of %g and %g is %g.", in.A, in.B, sum)}},
	}, addResult{Sum: sum}, nil
}

func greet(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	name := req.Params.Arguments["name"]
	if name == "" {
		name = "world"
	}
	return &mcp.GetPromptResult{
		Description: "A friendly greeting",
		Messages: []*mcp.PromptMessage{{
			Role:    "user",
			Content: &mcp.TextContent{Text: "Please greet " + name + " warmly."},
		}},
	}, nil
}

func helloWorld(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: req.Params.URI, MIMEType: "text/plain", Text: "Hello, world!",
	}}}, nil
}

// newServer builds the server with its tools, prompt and resource.
func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "hello-server", Version: "0.1.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo a message back"}, echo)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers"}, add)
	s.AddPrompt(&mcp.Prompt{
		Name:        "greet",
		Description: "Greet someone by name",
		Arguments:   []*mcp.PromptArgument{{Name: "name", Description: "who to greet", Required: true}},
	}, greet)
	s.AddResource(&mcp.Resource{
		URI: "hello://world", Name: "hello-world", Description: "A friendly text", MIMEType: "text/plain",
	}, helloWorld)
	return s
}

func main() {
	addr := flag.String("http", "", "serve streamable HTTP (stateless, 2026-07-28 and legacy) at this address instead of stdio")
	flag.Parse()
	log.SetOutput(os.Stderr) // stdout carries the protocol
	if *addr != "" {
		server := newServer()
		handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})
		log.Printf("hello-server listening at http://%s/mcp", *addr)
		log.Fatal(http.ListenAndServe(*addr, handler))
	}
	if err := newServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatalf("hello-server: %v", err)
	}
}
