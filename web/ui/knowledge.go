package ui

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/knowledge"
)

func (d *Dashboard) knowledgeRoutes(g *echo.Group) {
	g.GET("/knowledge", d.page(identity.ReadTenant, d.knowledgePage))
	g.POST("/knowledge/forget", d.action("forgetKnowledgeSource", identity.ManageAgents, d.forgetSource))
}

// knowledgeData is the knowledge page: the employees to pick from, and
// for the one picked (or the shared wiki when none is) its memories, the
// sources they came from, its wiki pages and its belief stats.
type knowledgeData struct {
	Agents []identity.Agent
	Agent  *identity.Agent
	Query  string
	Hits   []knowledge.Hit
	// Flags are the injection-scan flags of each hit, by index.
	Flags   [][]string
	Sources []knowledge.Source
	Pages   []knowledge.WikiPage
	Shared  []knowledge.WikiPage
	Page    *knowledge.WikiPage
	Stats   *knowledge.Stats
	// Scores are the verified scores shown, label key then value; none
	// until the employee is calibrated.
	Scores [][2]string
	// Forgotten is the source just forgotten, and Review the wiki pages
	// that name it, for a person to review.
	Forgotten string
	Review    []knowledge.WikiPage
}

func (d *Dashboard) knowledgePage(c echo.Context, v *View) error {
	if d.d.Knowledge == nil {
		return fault.New(fault.Unavailable, "knowledge is not served here")
	}
	ctx := c.Request().Context()
	svc := d.d.Knowledge
	data := knowledgeData{Query: strings.TrimSpace(c.QueryParam("q")), Forgotten: c.QueryParam("forgotten")}
	var err error
	if data.Agents, err = d.d.Identity.ListAgents(ctx, v.Tenant.ID); err != nil {
		return err
	}
	if data.Shared, err = svc.Wikis(ctx, v.Tenant.ID, identity.Agent{}.ID, 500); err != nil {
		return err
	}
	if name := c.QueryParam("agent"); name != "" {
		i := slices.IndexFunc(data.Agents, func(a identity.Agent) bool { return a.Name == name })
		if i < 0 {
			return fault.New(fault.NotFound, "no AI employee %q", name)
		}
		a := data.Agents[i]
		data.Agent = &a
		if data.Hits, err = svc.Search(ctx, v.Principal, v.Tenant, knowledge.SearchInput{Text: data.Query, Agent: a.ID.String(), Limit: knowledge.MaxLimit}); err != nil {
			return err
		}
		for _, h := range data.Hits {
			data.Flags = append(data.Flags, knowledge.Scan(h.Subject+"\n"+h.Content))
		}
		if data.Sources, err = svc.Sources(ctx, v.Principal, a, 100); err != nil {
			return err
		}
		if data.Pages, err = svc.Wikis(ctx, v.Tenant.ID, a.ID, 500); err != nil {
			return err
		}
		st, err := svc.Stats(ctx, v.Tenant.ID, a.ID)
		if err != nil {
			return err
		}
		data.Stats = &st
		for _, sc := range []struct {
			key string
			v   *float64
		}{{"knowledge.hit_rate", st.Verified.HitRate}, {"knowledge.wilson", st.Verified.WilsonLow},
			{"knowledge.brier", st.Verified.MeanBrier}, {"knowledge.overconfidence", st.Verified.Overconfidence}} {
			if sc.v != nil {
				data.Scores = append(data.Scores, [2]string{sc.key, strconv.FormatFloat(*sc.v, 'f', 3, 64)})
			}
		}
	}
	if path := c.QueryParam("page"); path != "" {
		owner := identity.Agent{}
		if data.Agent != nil {
			owner = *data.Agent
		}
		p, err := svc.Wiki(ctx, v.Tenant.ID, owner.ID, path)
		if err != nil {
			return err
		}
		data.Page = &p
	}
	if data.Forgotten != "" {
		for _, p := range append(slices.Clone(data.Shared), data.Pages...) {
			if slices.Contains(p.HostSources, data.Forgotten) {
				data.Review = append(data.Review, p)
			}
		}
	}
	v.Title, v.Nav, v.Data = "knowledge.title", "knowledge", data
	return d.f.Render(c, http.StatusOK, "knowledge", v)
}

// forgetSource forgets the source posted and shows the page again with
// the wiki pages to review.
func (d *Dashboard) forgetSource(c echo.Context, v *View) error {
	if d.d.Knowledge == nil {
		return fault.New(fault.Unavailable, "knowledge is not served here")
	}
	key := strings.TrimSpace(c.FormValue("source"))
	v.Object = "knowledge_source:" + key
	if _, err := d.d.Knowledge.Forget(c.Request().Context(), v.Principal, key); err != nil {
		return err
	}
	q := url.Values{"done": {"source_forgotten"}, "forgotten": {key}}
	if a := c.FormValue("agent"); a != "" {
		q.Set("agent", a)
	}
	return c.Redirect(http.StatusSeeOther, v.Dash("knowledge")+"?"+q.Encode())
}
