package spend

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/observe"
	"github.com/mcpgw/mcpgw/internal/store"
)

// Cost is one server's mcp_info.mcp_server_cost_info.
type Cost struct {
	// Default is default_cost_per_query: what a call of any tool costs.
	Default float64
	// PerTool is tool_name_to_cost_per_query: what a call of one tool costs, by the
	// tool's upstream name (a served, prefixed name is matched too).
	PerTool map[string]float64
}

// Costs are the cost of each server's calls, by server name.
type Costs map[string]Cost

// of is what a call of tool (as the caller named it) on server costs.
func (c Costs) of(server, tool string) float64 {
	sc, ok := c[server]
	if !ok {
		return 0
	}
	if v, ok := sc.PerTool[tool]; ok {
		return v
	}
	if rest, ok := strings.CutPrefix(tool, server); ok && len(rest) > 1 {
		if v, ok := sc.PerTool[rest[1:]]; ok { // past the prefix separator
			return v
		}
	}
	return sc.Default
}

// Sink is the observe.Sink that turns every tools/call and tools/list the gateway
// answers into a spend row for a Writer, setting the request's Cost first.
type Sink struct {
	observe.Base
	w     *Writer
	costs atomic.Pointer[Costs]
}

// NewSink returns a Sink writing through w, with no costs until SetCosts.
func NewSink(w *Writer) *Sink { return &Sink{w: w} }

// SetCosts makes c the costs of the calls that end from now on.
func (s *Sink) SetCosts(c Costs) { s.costs.Store(&c) }

// Cost is what a call of tool on server costs now.
func (s *Sink) Cost(server, tool string) float64 {
	if c := s.costs.Load(); c != nil {
		return c.of(server, tool)
	}
	return 0
}

// EndRequest records r when it is a tools/call or tools/list. A tools/call costs its
// server's price when it reached the server and was answered without a fault (a tool's
// own in-band error still cost the call); a refused or failed one costs nothing.
func (s *Sink) EndRequest(_ context.Context, r *observe.Request) {
	var callType string
	switch r.Method {
	case mcp.MethodToolsCall:
		callType = store.CallTypeTool
	case mcp.MethodToolsList:
		callType = store.CallTypeList
	default:
		return
	}
	status, faultName := store.SpendSuccess, ""
	if r.Failed() {
		status, faultName = store.SpendFailure, r.ErrorType()
	}
	if callType == store.CallTypeTool && r.Server != "" && r.Fault == 0 && r.ErrorCode == 0 && r.Status < 400 {
		r.Cost = s.Cost(r.Server, r.Target)
	}
	s.w.Add(store.SpendRow{RequestID: store.NewTimeID(r.Start), CallType: callType, Model: r.Target, Server: r.Server,
		APIKey: r.Caller.KeyHash, KeyAlias: r.Caller.KeyAlias, TeamID: r.Caller.Team, UserID: r.Caller.User,
		EndUser: r.Caller.EndUser, OrganizationID: r.Caller.Org, Status: status, Fault: faultName, Spend: r.Cost,
		StartTime: r.Start, EndTime: r.Start.Add(r.Duration)})
}
