package sharedstate

import (
	"errors"

	"github.com/redis/go-redis/v9"
)

// isNil reports whether err is Redis's "no value" answer (SET NX on a key
// that exists answers so): an answer, not a failure.
func isNil(err error) bool { return errors.Is(err, redis.Nil) }
