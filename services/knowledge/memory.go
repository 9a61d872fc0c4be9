package knowledge

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// Limits on what a caller writes and asks for.
const (
	MaxContent   = 16 << 10 // bytes of a memory's content
	MaxSubject   = 400      // bytes of a subject
	MaxFacts     = 20       // key facts of one memory
	MaxFact      = 1000     // bytes of one key fact
	MaxParents   = 20       // memories one write derives from
	MaxQuery     = 1000     // bytes of a search text
	DefaultLimit = 10
	MaxLimit     = 50
)

// NewMemory is a memory to store.
type NewMemory struct {
	Agent   string // the employee, by name or id; an employee's own when empty
	Layer   Layer
	Subject string
	Content string
	Facts   []string
	Parents []string // ids of the memories this one is derived from
}

// StoreMemory stores a memory of p's (or, for a caller that is not an AI
// employee, of the employee it names) from the call callID.
func (s *Service) StoreMemory(ctx context.Context, p identity.Principal, callID uuid.UUID, in NewMemory) (Memory, error) {
	switch in.Layer {
	case "":
		in.Layer = Semantic
	case Episodic, Semantic, Procedural:
	default: // profiles and decisions have their own tools
		return Memory{}, fault.New(fault.Invalid, "layer must be one of episodic, semantic, procedural")
	}
	return s.put(ctx, p, callID, in, MsgForgotten)
}

func (s *Service) put(ctx context.Context, p identity.Principal, callID uuid.UUID, in NewMemory, forgotten string) (Memory, error) {
	if err := checkText("content", in.Content, 1, MaxContent); err != nil {
		return Memory{}, err
	}
	if err := checkText("subject", in.Subject, 0, MaxSubject); err != nil {
		return Memory{}, err
	}
	if len(in.Facts) > MaxFacts {
		return Memory{}, fault.New(fault.TooLarge, "key_facts holds at most %d facts", MaxFacts)
	}
	for _, f := range in.Facts {
		if err := checkText("each key fact", strings.TrimSpace(f), 1, MaxFact); err != nil {
			return Memory{}, err
		}
	}
	parents, err := parseIDs("parents", in.Parents, MaxParents)
	if err != nil {
		return Memory{}, err
	}
	agent, err := s.writeTarget(ctx, p, in.Agent)
	if err != nil {
		return Memory{}, err
	}
	src, err := s.source(ctx, p, callID)
	if err != nil {
		return Memory{}, err
	}
	facts := make([]string, 0, len(in.Facts))
	for _, f := range in.Facts {
		facts = append(facts, strings.TrimSpace(f))
	}
	m := Memory{TenantID: p.TenantID, ID: uuid.New(), AgentID: agent, Layer: in.Layer, Subject: strings.TrimSpace(in.Subject),
		Content: in.Content, Facts: facts, Parents: parents, Source: src}
	err = s.cfg.Store.PutMemory(ctx, &m)
	switch {
	case errors.Is(err, ErrForgotten):
		return Memory{}, fenced(forgotten)
	case fault.Is(err, fault.NotFound):
		return Memory{}, fault.New(fault.NotFound, "Not stored: a parent memory this write names does not exist")
	case err != nil:
		return Memory{}, err
	}
	return m, nil
}

// writeTarget is the employee a write of p's is for: p itself when it is
// an employee (which may name only itself), else the employee it names.
func (s *Service) writeTarget(ctx context.Context, p identity.Principal, ref string) (uuid.UUID, error) {
	if p.IsEmployee() {
		if ref == "" || ref == p.AgentID.String() {
			return p.AgentID, nil
		}
		a, err := s.agent(ctx, p.TenantID, ref)
		if err != nil || a.ID != p.AgentID {
			return uuid.Nil, fault.New(fault.Forbidden, "an AI employee writes only its own knowledge; leave agent empty")
		}
		return a.ID, nil
	}
	if ref == "" {
		return uuid.Nil, fault.New(fault.Invalid, "agent is required: this caller is not an AI employee, so name the employee")
	}
	a, err := s.agent(ctx, p.TenantID, ref)
	if err != nil {
		return uuid.Nil, err
	}
	return a.ID, nil
}

// agent resolves an employee by id or name; NotFound for anything else.
func (s *Service) agent(ctx context.Context, tenantID uuid.UUID, ref string) (identity.Agent, error) {
	var a identity.Agent
	var err error
	if id, perr := uuid.Parse(ref); perr == nil {
		a, err = s.cfg.Directory.Agent(ctx, tenantID, id)
	} else {
		a, err = s.cfg.Directory.AgentByName(ctx, tenantID, ref)
	}
	if fault.Is(err, fault.NotFound) || (err == nil && a.Status != identity.AgentActive) {
		return identity.Agent{}, fault.New(fault.NotFound, "no AI employee %q in this tenant", clip(ref, 80))
	}
	return a, err
}

func limit(n int) int {
	if n <= 0 {
		return DefaultLimit
	}
	return min(n, MaxLimit)
}

func checkText(name, v string, minBytes, maxBytes int) error {
	if !utf8.ValidString(v) {
		return fault.New(fault.Invalid, "%s must be valid UTF-8", name)
	}
	if len(v) > maxBytes {
		return fault.New(fault.TooLarge, "%s is %d bytes; at most %d bytes of UTF-8", name, len(v), maxBytes)
	}
	if len(strings.TrimSpace(v)) < minBytes {
		return fault.New(fault.Invalid, "%s must not be empty", name)
	}
	return nil
}

func parseIDs(name string, refs []string, maxN int) ([]uuid.UUID, error) {
	if len(refs) > maxN {
		return nil, fault.New(fault.TooLarge, "%s holds at most %d ids", name, maxN)
	}
	out := make([]uuid.UUID, 0, len(refs))
	for _, r := range refs {
		id, err := uuid.Parse(strings.TrimSpace(r))
		if err != nil {
			return nil, fault.New(fault.Invalid, "%s must hold memory ids (UUIDs)", name)
		}
		out = append(out, id)
	}
	return out, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
