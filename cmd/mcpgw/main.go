// Command mcpgw is an MCP gateway compatible with LiteLLM's proxy configuration.
//
// Usage:
//
//	mcpgw serve --config FILE [--host HOST] [--port PORT] [--log-level LEVEL] [--data-dir DIR]
//	mcpgw check --config FILE
//	mcpgw key create|list|revoke [--url URL] [--master-key-env NAME] ...
//	mcpgw version
//
// serve re-reads its config file on SIGHUP and when the file changes (its directory is
// watched); an invalid file is logged with its lines and the running config stays.
//
// check prints every problem serve would stop at (the file's, the master key rule, the
// environment, each upstream's settings) and, beyond that, stdio commands it cannot find; it
// starts nothing and contacts no upstream.
//
// key manages virtual keys through a running gateway's /key/* API (the same API curl would
// call; no direct database access), authenticated by the master key read from an environment
// variable (LITELLM_MASTER_KEY, or the one --master-key-env names): a key given as a flag value
// would be left in shell history and in every process listing.
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
