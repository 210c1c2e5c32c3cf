// Command mcpgw is an MCP gateway compatible with LiteLLM's proxy configuration.
//
// Usage:
//
//	mcpgw serve --config FILE [--host HOST] [--port PORT] [--log-level LEVEL] [--data-dir DIR]
//	mcpgw check --config FILE
//	mcpgw version
//
// check prints every problem serve would stop at (the file's, the master key rule, the
// environment, each upstream's settings) and, beyond that, stdio commands it cannot find; it
// starts nothing and contacts no upstream.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(code)
}
