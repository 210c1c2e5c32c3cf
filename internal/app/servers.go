package app

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/panics"
	"github.com/mcpgw/mcpgw/internal/secretbox"
	"github.com/mcpgw/mcpgw/internal/store"
)

// serverSyncTimeout bounds one Apply the stored servers' sync runs (another replica's change).
const serverSyncTimeout = 30 * time.Second

// serverState is what the App keeps to merge the stored servers (general_settings.
// store_model_in_db) into the config file's, and to count the configs applied.
type serverState struct {
	// fileCfg is the config file's config last applied (or started with).
	fileCfg atomic.Pointer[config.Config]
	// lastRows are the stored servers last read, used when a file reload cannot read them.
	lastRows []store.MCPServer // guarded by App.mu
	// box seals stored credentials; nil without LITELLM_SALT_KEY.
	box       *secretbox.Box
	lookupEnv func(string) (string, bool)
	// generation counts the configs applied: 1 at New, +1 per successful Apply.
	generation atomic.Int64
	// storedWrites counts the API's writes of the stored servers; readSeq is storedWrites
	// when the Apply running read them (guarded by App.mu), storedApplied the readSeq of the
	// generation serving now: a write numbered n serves once storedApplied >= n.
	storedWrites, storedApplied atomic.Int64
	readSeq                     int64

	syncKick   chan struct{} // capacity 1: the stored servers changed (here or on another replica)
	syncCancel context.CancelFunc
	syncDone   chan struct{}
	// localPending says an API write of this replica waits for the next sync; failedUpTo is
	// the highest write number an Apply that failed had read (its writers answer 500).
	localPending atomic.Bool
	failedUpTo   atomic.Int64
}

// initServers sets up the stored servers' state at New: the credential box (from the salt
// key) and, with a store, the goroutine that re-applies when another replica changes them.
func (a *App) initServers(file *config.Config, lookupEnv func(string) (string, bool)) error {
	a.lookupEnv = lookupEnv
	a.fileCfg.Store(file)
	a.generation.Store(1)
	if strings.TrimSpace(a.env.SaltKey) != "" {
		box, err := secretbox.New(a.env.SaltKey)
		if err != nil {
			return err
		}
		a.box = box
	}
	return nil
}

// storedEnabled reports whether servers are kept in the store under file.
func (a *App) storedEnabled(file *config.Config) bool {
	return a.store != nil && file != nil && file.General.StoreModelInDB
}

// withStoredServers returns the config file's config to run (cfg; nil means the one last
// applied) and the effective config: it plus the stored servers, read again now. A stored
// server that cannot run (its name, id or alias taken by a file server, a credential that no
// longer opens, an os.environ/ reference not set) is left out with a warning. Called with
// App.mu held. When the read fails, a file reload goes on with the servers read last; a
// re-apply of the stored servers (cfg nil) fails.
func (a *App) withStoredServers(ctx context.Context, cfg *config.Config) (file, merged *config.Config, err error) {
	file = cfg
	if file == nil {
		file = a.fileCfg.Load()
	}
	if !a.storedEnabled(file) {
		a.lastRows = nil
		return file, file, nil
	}
	a.readSeq = a.storedWrites.Load() // every write up to here is committed: the read sees it
	rows, err := a.store.ListServers(ctx)
	switch {
	case err != nil && cfg == nil:
		return nil, nil, fmt.Errorf("reading the stored mcp servers: %w", err)
	case err != nil:
		a.log.Warn("cannot read the stored mcp servers; applying the ones read last", "error", err.Error())
		rows = a.lastRows
	default:
		a.lastRows = rows
	}
	m := *file
	m.Servers = slices.Clone(file.Servers)
	for _, row := range rows {
		s, msg := a.storedServer(file, row)
		if msg == "" {
			msg = config.RouteConflict(s, m.Servers)
		}
		if msg != "" {
			a.log.Warn("stored mcp server left out", "server_id", row.ServerID, "server_name", row.ServerName, "reason", msg)
			continue
		}
		m.Servers = append(m.Servers, s)
	}
	return file, &m, nil
}

// storedServer is row as a config server (validated as a file's server), or why it cannot run.
func (a *App) storedServer(file *config.Config, row store.MCPServer) (config.Server, string) {
	fields, err := rowFields(a.box, row)
	if err != nil {
		return config.Server{}, err.Error()
	}
	s, problems, err := config.ParseServer(row.ServerName, fields, file, apiConfigOptions(a.lookupEnv))
	if err != nil {
		return config.Server{}, problemsMessage(problems, err)
	}
	return s, ""
}

// problemsMessage joins the messages of problems (no lines: they mean nothing for a stored
// server), or err's when there are none.
func problemsMessage(problems []config.Problem, err error) string {
	if len(problems) == 0 {
		return err.Error()
	}
	msgs := make([]string, 0, len(problems))
	for _, p := range problems {
		msgs = append(msgs, p.Msg)
	}
	return strings.Join(msgs, "; ")
}

// applied records that a generation built from file (and the stored servers read for it)
// now serves: the next re-apply starts from file, and the generation grows by one. Called
// with App.mu held.
func (a *App) applied(file *config.Config) {
	a.fileCfg.Store(file)
	a.storedApplied.Store(a.readSeq)
	a.generation.Add(1)
}

// startServerSync starts the goroutine that re-applies the config when the stored servers
// changed: written through this replica's API (kickSync), or by another replica (the store's
// OnServersChanged; Postgres only). Kicks coalesce in its one slot, so a burst of writes
// costs one or two Applies, each reading the newest rows. It ends at Close.
func (a *App) startServerSync() {
	if a.store == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.syncKick, a.syncCancel, a.syncDone = make(chan struct{}, 1), cancel, make(chan struct{})
	a.store.OnServersChanged(a.kickSync)
	panics.Go(a.log, "syncing the stored mcp servers", func() {
		defer close(a.syncDone)
		for {
			select {
			case <-ctx.Done():
				return
			case <-a.syncKick:
			}
			a.syncStored(ctx)
		}
	}, nil)
}

// kickSync asks the sync goroutine for one more Apply, without waiting.
func (a *App) kickSync() {
	select {
	case a.syncKick <- struct{}{}:
	default: // one re-apply is pending already; it will read the newest rows
	}
}

// syncStored re-applies the config with the stored servers read again; a panic is logged
// (and fails the writes it covered) and the sync goes on.
func (a *App) syncStored(ctx context.Context) {
	local := a.localPending.Swap(false)
	upTo := a.storedWrites.Load() // every write numbered up to it is in the store already
	defer func() {
		if v := recover(); v != nil {
			a.failedUpTo.Store(max(a.failedUpTo.Load(), upTo))
			a.log.Error("recovered from a panic", append([]any{"in", "syncing the stored mcp servers"}, panics.Attrs(v)...)...)
		}
	}()
	if !local && !a.storedEnabled(a.fileCfg.Load()) {
		return
	}
	actx, cancel := context.WithTimeout(ctx, serverSyncTimeout)
	defer cancel()
	if local {
		if err := a.Apply(actx, nil); err != nil {
			a.failedUpTo.Store(max(a.failedUpTo.Load(), upTo))
			a.log.Error("applying a change of the stored mcp servers failed", "error", err.Error())
		}
		return
	}
	if rows, err := a.store.ListServers(actx); err == nil {
		a.mu.Lock()
		same := reflect.DeepEqual(rows, a.lastRows)
		a.mu.Unlock()
		if same { // a notification about what this replica runs already (or a reconnect)
			return
		}
	}
	if err := a.Apply(actx, nil); err != nil && ctx.Err() == nil {
		a.log.Error("applying another replica's change to the stored mcp servers failed", "error", err.Error())
	}
}

// stopServerSync ends the sync goroutine, waiting for an Apply it runs (its context ends too).
func (a *App) stopServerSync() {
	if a.syncCancel == nil {
		return
	}
	a.syncCancel()
	<-a.syncDone
}

// closeStore closes st (nil: nothing) for a New that fails after opening
// it; its error joins the one New returns.
func closeStore(st *store.Store) error {
	if st == nil {
		return nil
	}
	return st.Close()
}
