//go:build soakdebug

package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
)

// soakDebugEnv names the loopback address on which a binary built with
// -tags soakdebug serves its runtime figures (bench/soak reads them).
const soakDebugEnv = "MCPGW_SOAK_DEBUG_ADDR"

// soakFigures are the runtime figures served on the debug address.
type soakFigures struct {
	Goroutines int    `json:"goroutines"`
	HeapInuse  uint64 `json:"heap_inuse"`
	HeapAlloc  uint64 `json:"heap_alloc"`
	HeapSys    uint64 `json:"heap_sys"`
	Sys        uint64 `json:"sys"`
}

// init starts the debug listener when soakDebugEnv names a loopback address.
// GET / returns the figures; GET /gc first runs a collection and returns
// freed memory to the OS, so leaks can be told from garbage.
func init() {
	addr := os.Getenv(soakDebugEnv)
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(os.Stderr, "mcpgw: %s must be a loopback IP:PORT; debug figures not served\n", soakDebugEnv)
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpgw: %s: %v; debug figures not served\n", soakDebugEnv, err)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", serveSoakFigures)
	mux.HandleFunc("GET /gc", func(w http.ResponseWriter, r *http.Request) {
		runtime.GC()
		debug.FreeOSMemory()
		serveSoakFigures(w, r)
	})
	go func() {
		defer func() {
			if v := recover(); v != nil {
				fmt.Fprintln(os.Stderr, "mcpgw: soak debug listener panicked; figures no longer served")
			}
		}()
		_ = http.Serve(ln, mux)
	}()
}

// serveSoakFigures writes the current runtime figures as JSON.
func serveSoakFigures(w http.ResponseWriter, _ *http.Request) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(soakFigures{
		Goroutines: runtime.NumGoroutine(),
		HeapInuse:  ms.HeapInuse, HeapAlloc: ms.HeapAlloc, HeapSys: ms.HeapSys, Sys: ms.Sys,
	})
}
