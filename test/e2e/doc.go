// Package e2e drives the gateway that internal/app builds over HTTP, against
// real upstream peers (the go-sdk fixture, server-everything, in-process
// fakes) and real clients (go-sdk, the TypeScript SDK, the MCP Inspector).
package e2e
