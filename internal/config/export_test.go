package config

import "slices"

// HasErrors reports whether any problem is an error.
func HasErrors(problems []Problem) bool {
	return slices.ContainsFunc(problems, func(p Problem) bool { return p.Severity == SeverityError })
}
