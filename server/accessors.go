package server

import "github.com/a2a-gateway/gateway/turn"

// Ledger returns the ledger s opened (bbolt in Config.DataDir, or the PostgreSQL store
// Config.Store names), for a caller in the same process that reads it while s serves
// (tests, tools). It is s's: Close closes it.
func (s *Server) Ledger() Ledger { return s.ledger }

// Runner returns the turn runner behind s's A2A routes (its counts of running turns and
// open streams, for a caller in the same process). Close closes it.
func (s *Server) Runner() *turn.Runner { return s.runner }

// Config returns the configuration s runs with.
func (s *Server) Config() Config { return s.cfg }
