package mcp

import "strings"

// The method table's views that only the tests read: they check the table's
// rows from every side.

// KnownMethod reports whether method appears anywhere in the method table (any era, any direction, tasks extension included).
func KnownMethod(method string) bool { return specOf(method).known }

// IsNotification reports whether method is a notification name (prefix "notifications/").
func IsNotification(method string) bool { return strings.HasPrefix(method, "notifications/") }

// ServerMethodInEra reports whether a server of the given era may send method (request or notification) to a client.
func ServerMethodInEra(method string, era Era) bool {
	s := specOf(method)
	switch era {
	case EraLegacy:
		return s.serverLegacy
	case EraModern:
		return s.serverModern
	}
	return false
}

// ServerMethodInRevision reports whether a server may send method under the exact known revision; false for unknown revisions.
func ServerMethodInRevision(method, revision string) bool {
	if !IsKnownRevision(revision) {
		return false
	}
	s := specOf(method)
	if IsModern(revision) {
		return s.serverModern
	}
	return s.serverLegacy && (s.since == "" || revision >= s.since)
}

// ModernOnly reports whether method exists in 2026-07-28 core but in no legacy revision (server/discover, subscriptions/listen, the listen ack).
func ModernOnly(method string) bool {
	s := specOf(method)
	return (s.clientModern || s.serverModern) && !(s.clientLegacy || s.serverLegacy)
}

// IsServerToClientRequest reports whether method is a request a legacy server sends to its client.
func IsServerToClientRequest(method string) bool { return specOf(method).serverRequest }

// PaginatedMethod reports whether method takes params.cursor and returns nextCursor.
func PaginatedMethod(method string) bool { return specOf(method).paginated }

// TasksExtensionMethod reports whether method is a client→server request of the modern tasks extension
// (tasks/get, tasks/update, tasks/cancel); on HTTP its Mcp-Name mirrors params.taskId.
func TasksExtensionMethod(method string) bool {
	switch method {
	case MethodTasksGet, MethodTasksUpdate, MethodTasksCancel:
		return true
	}
	return false
}

// HeaderValueWrapped reports whether a (trimmed) header value uses the =?base64?…?= form.
func HeaderValueWrapped(s string) bool {
	_, ok := unwrapBase64(strings.Trim(s, " \t"))
	return ok
}

// RemovedInModern reports whether method existed (either direction) in the legacy era but is not a core 2026-07-28 message.
// The former server→client requests count as removed: they survive only as InputRequest objects (see IsInputRequestMethod),
// and tasks/get and tasks/cancel only through the tasks extension (see TasksExtensionMethod).
func RemovedInModern(method string) bool {
	s := specOf(method)
	return (s.clientLegacy || s.serverLegacy) && !(s.clientModern || s.serverModern)
}
