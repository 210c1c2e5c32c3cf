// Package redisconn builds the gateway's one Redis client from its settings and keeps its health:
// whether Redis answered the last command, the last error when it did not, and how many outages
// there were. Everything that shares state between replicas through Redis (the shared limits,
// and what internal/app hands the client to) uses the one Conn that internal/app builds.
//
// # Settings
//
// Settings come from a URL (redis:// or rediss:// for TLS, with user, password and database
// number in it) or from a host, port, username, password and TLS switch, as LiteLLM reads
// REDIS_URL or REDIS_HOST, REDIS_PORT, REDIS_USERNAME, REDIS_PASSWORD and REDIS_SSL; internal/app
// merges the file's and the environment's. A URL wins over the host form; a password or username
// given apart from a URL that has none is added to it. Errors about settings never quote the URL
// or the password: a URL that does not parse is reported with its scheme at most.
//
// # Bounds and timeouts (defaults)
//
//   - DialTimeout 2 s, ReadTimeout and WriteTimeout 1 s: a limit check waits at most about that
//     long on a Redis that stopped answering before the caller falls back (see internal/limits);
//     one command is never retried (MaxRetries 0) so an outage is seen at once, not after
//     retries multiplied by timeouts.
//   - PoolSize 32 connections, MaxActiveConns 64 (a burst beyond the pool waits PoolTimeout
//     1.5 s for a connection, then fails like an outage), MinIdleConns 2, idle connections
//     closed after 5 minutes.
//
// These are sized for the gateway's use: short scripts, one per admitted call.
//
// # Health
//
// Observe records a command's outcome: an error that means Redis could not be reached or did
// not answer (Unavailable) marks Redis down, any answer marks it up. The first failure of an
// outage is logged once at WARN (the error text, which names the address, never a password) and
// counted; the recovery is logged once at INFO. Try is what every user of the Conn asks before
// a command: always yes while Redis is up; while down, yes once per RetryEvery (1 s) among all
// of them, so a replica waits on an unreachable Redis once a second, not once per call (each
// user applying a rule of its own was rejected: one rule shared by the Conn lets the limits'
// finding an outage spare the tombstones their own timeout). Health returns the state for readiness. Ping
// sends a PING and observes it, so readiness both reports and refreshes the state. A Conn starts
// no goroutine of its own (go-redis runs its pool's).
package redisconn
