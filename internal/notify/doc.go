// Package notify is the notification hub: upstream clients publish the
// notifications their servers send outside any operation (list_changed,
// resources/updated, notifications/message), and whatever follows them (the
// catalog's caches, the gateway's listens and sessions) subscribes.
//
// The hub is built before the clients and the layers that follow them, so
// neither side needs a reference to the other. Hub is the seam; Memory is
// the in-process implementation. A hub shared across replicas implements the
// same interface: Publish fans an event out to every replica, each of which
// delivers it to its own subscribers (sharedstate.Hub does so through
// Redis, for list changes only).
package notify
