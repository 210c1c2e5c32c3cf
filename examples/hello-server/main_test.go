package main

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestHelloServer(t *testing.T) {
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := newServer().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	text := func(res *mcp.CallToolResult, err error) string {
		t.Helper()
		if err != nil || res.IsError || len(res.Content) != 1 {
			t.Fatalf("call: %v %+v", err, res)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	if got := text(cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})); got != "Echo: hi" {
		t.Errorf("echo = %q", got)
	}
	if got := text(cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3.5}})); got != "The sum of 2 and 3.5 is 5.5." {
		t.Errorf("add = %q", got)
	}
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || p.Messages[0].Content.(*mcp.TextContent).Text != "Please greet Ada warmly." {
		t.Errorf("greet = %+v, %v", p, err)
	}
	r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "hello://world"})
	if err != nil || r.Contents[0].Text != "Hello, world!" {
		t.Errorf("read = %+v, %v", r, err)
	}
}
