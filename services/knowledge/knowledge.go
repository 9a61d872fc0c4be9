// Package knowledge is what AI employees remember between rounds: memories
// with their key facts (in layers, including user profiles and resolved
// decisions), each employee's wiki and the tenant's shared wiki, hand-offs
// from one round of a task to the next, and beliefs with their settlements
// and calibration.
//
// Every write records its source, derived from the credential and never
// from an argument (Derive): the round a round token stands for, the
// responsibility run that round belongs to, or, outside a round, the one
// call. An operator can forget a source (Service.Forget): what was stored
// from it is removed, later writes from it are refused, and wiki pages it
// touched are listed for a person to review. docs/knowledge.md is the
// reference.
package knowledge

import (
	"time"

	"github.com/google/uuid"
)

// Layer is the kind of a memory.
type Layer string

// The layers. user_profile_record writes profile memories and
// decision_resolve writes decision memories; memory_store writes the
// other three.
const (
	Episodic   Layer = "episodic"   // what happened: events, conversations, outcomes
	Semantic   Layer = "semantic"   // what is true: facts about the work and the world
	Procedural Layer = "procedural" // how to do something: steps, conventions
	Profile    Layer = "profile"    // what a person prefers or is
	Decision   Layer = "decision"   // a choice that was made and why
)

// Layers lists every layer.
var Layers = []Layer{Episodic, Semantic, Procedural, Profile, Decision}

// Valid reports whether l is a known layer.
func (l Layer) Valid() bool {
	for _, x := range Layers {
		if x == l {
			return true
		}
	}
	return false
}

// Memory is one stored memory of one AI employee.
type Memory struct {
	TenantID  uuid.UUID   `json:"-"`
	ID        uuid.UUID   `json:"id"`
	AgentID   uuid.UUID   `json:"agent_id"`
	Layer     Layer       `json:"layer"`
	Subject   string      `json:"subject,omitempty"`
	Content   string      `json:"content"`
	Facts     []string    `json:"key_facts"`
	Parents   []uuid.UUID `json:"parents,omitempty"`
	Source    Source      `json:"source"`
	CreatedAt time.Time   `json:"created_at"`
}

// Hit is one search result: the memory, where it came from (its Source)
// and how well it matched.
type Hit struct {
	Memory
	Score float64 `json:"score"`
}

// Query is a memory search. Agents is never empty: the service fills it
// with the memories the caller may read. Zero fields do not filter.
type Query struct {
	Text string
	// Segments are the content words of a text written without spaces
	// (Segments), matched by character trigrams.
	Segments  []string
	Agents    []uuid.UUID
	Layer     Layer
	SourceKey string
	Since     time.Time
	Until     time.Time
	Limit     int
}

// WikiPage is one page of an employee's wiki (AgentID set) or of the
// tenant's shared wiki (AgentID uuid.Nil).
type WikiPage struct {
	TenantID uuid.UUID `json:"-"`
	ID       uuid.UUID `json:"id"`
	AgentID  uuid.UUID `json:"agent_id,omitzero"`
	Path     string    `json:"path"`
	// Content is the page as written, without any host_sources of its
	// writer's; Render adds the recorded ones.
	Content string `json:"content"`
	// HostSources are the sources of the newest writes, newest first.
	HostSources []string  `json:"host_sources"`
	UpdatedBy   string    `json:"updated_by"`
	Revision    int       `json:"revision"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Shared reports whether p is a page of the shared wiki.
func (p WikiPage) Shared() bool { return p.AgentID == uuid.Nil }

// Forgotten is what forgetting a source did.
type Forgotten struct {
	Source   Source `json:"source"`
	Memories int64  `json:"memories_removed"`
	Handoffs int64  `json:"handoffs_removed"`
	Beliefs  int64  `json:"beliefs_removed"`
	// Review lists the wiki pages whose host_sources name the source:
	// they are kept, for a person to review.
	Review []WikiPage `json:"wiki_pages_to_review"`
	// Already is true when the source had been forgotten before.
	Already bool `json:"already_forgotten"`
}
