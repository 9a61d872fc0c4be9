package api

import (
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/knowledge"
)

// Knowledge is the admin API of what AI employees remember: operators
// search an employee's memories, list sources, forget a source, read the
// wikis, settle beliefs as verified and read belief stats. Forgetting is
// an operator's action only: AI employees' credentials never reach the
// admin API. Add it with API.Add.
type Knowledge struct{ svc *knowledge.Service }

// NewKnowledge returns the knowledge resource.
func NewKnowledge(svc *knowledge.Service) Knowledge { return Knowledge{svc: svc} }

// MemoryList is the body of GET .../agents/{agent}/memories.
type MemoryList struct {
	Memories   []knowledge.Hit `json:"memories"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

// SourceList is the body of GET .../knowledge/sources.
type SourceList struct {
	Sources    []knowledge.Source `json:"sources"`
	NextCursor string             `json:"next_cursor,omitempty"`
}

// WikiList is the body of GET .../wiki.
type WikiList struct {
	Pages      []knowledge.WikiPage `json:"pages"`
	NextCursor string               `json:"next_cursor,omitempty"`
}

// Settlement is the body of POST .../beliefs/{belief}/settle.
type Settlement struct {
	// Outcome is whether the belief's claim turned out true, as checked
	// by the operator.
	Outcome *bool `json:"outcome"`
}

// Settled is the answer to a verified settlement.
type Settled struct {
	Belief                  knowledge.Belief `json:"belief"`
	CountsTowardCalibration bool             `json:"counts_toward_calibration"`
}

// BeliefStats is the body of GET .../agents/{agent}/beliefs/stats.
type BeliefStats struct {
	Stats knowledge.Stats `json:"stats"`
}

// Operations lists the knowledge routes.
func (r Knowledge) Operations() []Operation {
	agent := QueryParam{Name: "agent", Type: "string", Description: "An AI employee's id or name; absent: the tenant's shared wiki (or every source)."}
	return []Operation{
		{Method: http.MethodGet, Path: "/tenants/:tenant/agents/:agent/memories", ID: "searchMemories", Tag: "knowledge", Needs: identity.ReadTenant,
			Summary: "Search an AI employee's memories (full text and character trigrams), each with its source", Response: MemoryList{}, Handler: r.search,
			Query: Paged(QueryParam{Name: "q", Type: "string", Description: "Text to look for; absent lists the newest."},
				QueryParam{Name: "layer", Type: "string", Enum: layerNames(), Description: "Only this layer."},
				QueryParam{Name: "source", Type: "string", Description: "Only memories from this source key."},
				QueryParam{Name: "top", Type: "integer", Min: 1, Max: knowledge.MaxLimit, Default: knowledge.DefaultLimit, Description: "How many results to rank, best first; pages of limit go through them."})},
		{Method: http.MethodGet, Path: "/tenants/:tenant/knowledge/sources", ID: "listKnowledgeSources", Tag: "knowledge", Needs: identity.ReadTenant,
			Summary: "List the sources knowledge came from (rounds, runs, calls), newest first", Response: SourceList{}, Handler: r.sources,
			Query: Paged(agent)},
		{Method: http.MethodPost, Path: "/tenants/:tenant/knowledge/sources/:source_key/forget", ID: "forgetKnowledgeSource", Tag: "knowledge", Needs: identity.ManageAgents,
			Summary:     "Forget a source: remove what it stored, refuse later writes from it, list wiki pages naming it for review",
			Description: "Memories stored from the source (and memories derived from them), its hand-offs and beliefs are removed; later writes from it are refused and audited as memory_write_fenced. Wiki pages whose host_sources name it are listed, never deleted.",
			Response:    knowledge.Forgotten{}, Handler: r.forget},
		{Method: http.MethodGet, Path: "/tenants/:tenant/wiki", ID: "listWikiPages", Tag: "knowledge", Needs: identity.ReadTenant,
			Summary: "List the pages of an AI employee's wiki or the shared wiki", Response: WikiList{}, Handler: r.wikis, Query: Paged(agent)},
		{Method: http.MethodGet, Path: "/tenants/:tenant/wiki/page", ID: "readWikiPage", Tag: "knowledge", Needs: identity.ReadTenant,
			Summary: "Read one wiki page with its host_sources", Response: knowledge.WikiPage{}, Handler: r.wiki,
			Query: []QueryParam{agent, {Name: "path", Type: "string", Description: "The page's path."}}},
		{Method: http.MethodPost, Path: "/tenants/:tenant/beliefs/:belief/settle", ID: "settleBeliefVerified", Errors: []int{http.StatusConflict}, Tag: "knowledge", Needs: identity.ManageAgents,
			Summary: "Settle a belief as verified by an operator: it counts toward calibration (it may replace the employee's own report)", Request: Settlement{}, Response: Settled{}, Handler: r.settle},
		{Method: http.MethodGet, Path: "/tenants/:tenant/agents/:agent/beliefs/stats", ID: "beliefStats", Tag: "knowledge", Needs: identity.ReadTenant,
			Summary: "Belief calibration of an AI employee", Response: BeliefStats{}, Handler: r.stats},
	}
}

func layerNames() []string {
	out := make([]string, len(knowledge.Layers))
	for i, l := range knowledge.Layers {
		out[i] = string(l)
	}
	return out
}

func (r Knowledge) search(c echo.Context) error {
	limit := 0
	if s := c.QueryParam("top"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > knowledge.MaxLimit {
			return fault.New(fault.Invalid, "top must be 1-%d", knowledge.MaxLimit)
		}
		limit = n
	}
	hits, err := r.svc.Search(c.Request().Context(), principal(c), tenant(c), knowledge.SearchInput{Text: c.QueryParam("q"),
		Agent: c.Param("agent"), Layer: knowledge.Layer(c.QueryParam("layer")), Source: c.QueryParam("source"), Limit: limit})
	if err != nil {
		return err
	}
	rank := make(map[uuid.UUID]int, len(hits))
	for i, h := range hits {
		rank[h.ID] = i
	}
	page, next, err := pageBy(c, hits, func(h knowledge.Hit) string { return fmt.Sprintf("%03d", rank[h.ID]) })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, MemoryList{Memories: nonNil(page), NextCursor: next})
}

// queryAgent reads the optional agent query parameter.
func queryAgent(c echo.Context) (identity.Agent, error) {
	s := c.QueryParam("agent")
	if s == "" {
		return identity.Agent{}, nil
	}
	id, err := bodyAgent(c, "agent", AgentRef(s))
	return identity.Agent{ID: id}, err
}

func (r Knowledge) sources(c echo.Context) error {
	a, err := queryAgent(c)
	if err != nil {
		return err
	}
	srcs, err := r.svc.Sources(c.Request().Context(), principal(c), a, 500)
	if err != nil {
		return err
	}
	page, next, err := pageBy(c, srcs, func(s knowledge.Source) string {
		return fmt.Sprintf("%019d/%s", math.MaxInt64-s.CreatedAt.UnixNano(), s.Key)
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, SourceList{Sources: nonNil(page), NextCursor: next})
}

func (r Knowledge) forget(c echo.Context) error {
	f, err := r.svc.Forget(c.Request().Context(), principal(c), c.Param("source_key"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, f)
}

func (r Knowledge) wikis(c echo.Context) error {
	a, err := queryAgent(c)
	if err != nil {
		return err
	}
	pages, err := r.svc.Wikis(c.Request().Context(), tenant(c).ID, a.ID, 1000)
	if err != nil {
		return err
	}
	page, next, err := pageBy(c, pages, func(p knowledge.WikiPage) string { return p.Path })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, WikiList{Pages: nonNil(page), NextCursor: next})
}

func (r Knowledge) wiki(c echo.Context) error {
	a, err := queryAgent(c)
	if err != nil {
		return err
	}
	p, err := r.svc.Wiki(c.Request().Context(), tenant(c).ID, a.ID, c.QueryParam("path"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func (r Knowledge) settle(c echo.Context) error {
	id, err := pathID(c, "belief")
	if err != nil {
		return err
	}
	var in Settlement
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.Outcome == nil {
		return fault.New(fault.Invalid, "outcome is required (true or false)")
	}
	b, err := r.svc.SettleVerified(c.Request().Context(), tenant(c).ID, id, *in.Outcome, principal(c).ID())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, Settled{Belief: b, CountsTowardCalibration: b.CountsTowardCalibration()})
}

func (r Knowledge) stats(c echo.Context) error {
	id, err := resolveAgent(c, AgentRef(c.Param("agent")))
	if err != nil {
		return err
	}
	st, err := r.svc.StatsFor(c.Request().Context(), principal(c), id.String())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, BeliefStats{Stats: st})
}
