package app

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/openapimcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// specLoadTimeout bounds reading one spec_path document when a client is built.
const specLoadTimeout = 30 * time.Second

// withSpec makes uc a local upstream serving sv's spec_path document when it has one: the
// document is read and converted here, once per client (a reload that keeps the client keeps
// the document; one that changes spec_path or the connection settings reads it again).
func (s *shared) withSpec(uc *upstream.Config, sv config.Server) error {
	if sv.SpecPath == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), specLoadTimeout)
	defer cancel()
	srv, err := openapimcp.Load(ctx, sv.SpecPath, openapimcp.Options{Name: sv.Name, BaseURL: sv.URL, Client: s.httpClient})
	if err != nil {
		return fmt.Errorf("server %q: spec_path: %w", sv.Name, err)
	}
	uc.Transport, uc.Local = upstream.TransportLocal, srv
	return nil
}
