package identity

import "context"

// sessionKey is the context key of an in-process session's check.
type sessionKey struct{}

// SessionCheck establishes the caller of an in-process request made on behalf of a session
// that holds no gateway credential; it runs on every Authenticate of that request.
type SessionCheck func(ctx context.Context) (*Caller, error)

// WithSession returns ctx carrying check: Authenticate with that context calls check instead
// of reading the request's credential. Only in-process code can set a context, so a request
// from the network never carries one; the admin UI uses it to act as an identity signed in
// through its OpenID provider.
func WithSession(ctx context.Context, check SessionCheck) context.Context {
	return context.WithValue(ctx, sessionKey{}, check)
}

// sessionCaller runs the context's session check; ok is false when ctx carries none.
func sessionCaller(ctx context.Context) (c *Caller, ok bool, err error) {
	check, _ := ctx.Value(sessionKey{}).(SessionCheck)
	if check == nil {
		return nil, false, nil
	}
	c, err = check(ctx)
	if err == nil && c == nil {
		err = errInvalid()
	}
	return c, true, err
}
