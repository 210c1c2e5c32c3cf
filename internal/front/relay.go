package front

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// Relay carries a legacy caller's answer to a request this gateway sent it
// (elicitation, sampling, roots) to the replica holding that request, when
// the answer is POSTed to another. Without one (SessionConfig.Relay nil) an
// answer is delivered only on the replica that receives it, as on a single
// replica.
type Relay interface {
	// Replica names this replica; it is carried in the ids of the requests
	// this replica sends to callers, so the answer names its holder.
	Replica() string
	// Forward hands msg, a caller's response on the session named by its
	// relay key (see relayKey), to replica. It fails when the message could
	// not be handed on.
	Forward(ctx context.Context, replica, session string, msg []byte) error
	// Receive makes deliver receive the responses other replicas forward
	// to this one, until cancel is called (cancel may be called more than
	// once). deliver must not block.
	Receive(deliver func(session string, msg []byte)) (cancel func())
}

// askIDPrefix starts the ids of the requests the gateway sends to callers.
const askIDPrefix = "mcpgw-"

// relayForwardTimeout bounds handing one answer to another replica.
const relayForwardTimeout = 2 * time.Second

// askID is the id of a session's seq-th request to its caller; with a
// relay it names this replica ("mcpgw-<replica>.<seq>").
func askID(replica string, seq int64) jsonrpc.ID {
	if replica == "" {
		return jsonrpc.StringID(askIDPrefix + strconv.FormatInt(seq, 10))
	}
	return jsonrpc.StringID(askIDPrefix + replica + "." + strconv.FormatInt(seq, 10))
}

// askReplica is the replica named in the id of a request the gateway sent
// to a caller ("" when it names none).
func askReplica(id jsonrpc.ID) string {
	var s string
	if json.Unmarshal(id.Raw(), &s) != nil || !strings.HasPrefix(s, askIDPrefix) {
		return ""
	}
	s = s[len(askIDPrefix):]
	i := strings.LastIndexByte(s, '.')
	if i <= 0 {
		return ""
	}
	return s[:i]
}

// relayResponse hands a caller's response that matches no request waiting
// here to the replica its id names; it reports whether it did.
func (h *MCP) relayResponse(sess *live, msg *jsonrpc.Message) bool {
	relay := h.cfg.Sessions.Relay
	if relay == nil {
		return false
	}
	replica := askReplica(msg.ID)
	if replica == "" || replica == relay.Replica() {
		return false
	}
	raw := jsonrpc.EncodeResult(msg.ID, msg.Result)
	if msg.Error != nil {
		raw = jsonrpc.EncodeError(msg.ID, msg.Error)
	}
	ctx, cancel := context.WithTimeout(h.ctx, relayForwardTimeout)
	defer cancel()
	if err := relay.Forward(ctx, replica, relayKey(sess.id), raw); err != nil {
		h.cfg.Logger.Debug("caller's response not handed to the replica holding its request", "error", err.Error())
		return false
	}
	return true
}

// relayKey names a session on the relay: a digest of its sealed id, so the
// id itself, which the caller presents as a credential, never leaves the
// replica (the relay's channel may be read by whoever reads the Redis).
func relayKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return base64.RawURLEncoding.EncodeToString(sum[:18])
}

// receiveRelayed delivers a response another replica forwarded to the
// request waiting for it on this replica's live session named by key.
func (ss *sessions) receiveRelayed(key string, raw []byte) {
	msg, err := jsonrpc.Decode(raw)
	if err != nil || !msg.IsResponse() {
		return
	}
	ss.mu.Lock()
	e, ok := ss.relayed[key]
	ss.mu.Unlock()
	if ok {
		e.Value.(*live).deliver(msg)
	}
}
