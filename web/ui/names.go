package ui

import (
	"context"
	"html/template"
	"strings"

	"github.com/google/uuid"
)

// nameBook maps the tenant's ids to what a person reads: employees by
// name, members by email, keys by name, OAuth clients by name. A page
// loads it at most once, on its first name.
type nameBook struct {
	agents, members, keys map[uuid.UUID]string
	clients               map[string]string
}

// loadNames reads the tenant's directory. A list that cannot be read
// leaves its names out: the page then says "removed" rather than failing.
func (d *Dashboard) loadNames(ctx context.Context, tenantID uuid.UUID) *nameBook {
	b := &nameBook{agents: map[uuid.UUID]string{}, members: map[uuid.UUID]string{}, keys: map[uuid.UUID]string{}, clients: map[string]string{}}
	st := d.d.Identity
	if as, err := st.ListAgents(ctx, tenantID); err == nil {
		for _, a := range as {
			b.agents[a.ID] = a.Name
		}
	}
	if ms, err := st.ListMembers(ctx, tenantID); err == nil {
		for _, m := range ms {
			b.members[m.ID] = m.Email
		}
	}
	if ks, err := st.ListKeys(ctx, tenantID); err == nil {
		for _, k := range ks {
			b.keys[k.ID] = k.Name
		}
	}
	if d.d.Clients != nil {
		if cs, err := d.d.Clients.ListClients(ctx, tenantID); err == nil {
			for _, c := range cs {
				b.clients[c.ID] = c.Name
			}
		}
	}
	return b
}

func (v *View) book() *nameBook {
	if v.names == nil {
		if v.loadNames == nil {
			v.names = &nameBook{}
		} else {
			v.names = v.loadNames()
		}
	}
	return v.names
}

// Who renders a principal reference as it is written in audit rows,
// grants and task activity ("agent:<id>", "member:<id>",
// "operator:key:<id>", "client:<id>/member:<id>", or a bare id) as the
// name of who it is, linked to their page. Ids that name no one any more
// read "removed", with the reference in the title; other text is shown as
// it is.
func (v *View) Who(ref string) template.HTML {
	if client, member, ok := strings.Cut(ref, "/"); ok && strings.HasPrefix(client, "client:") {
		return v.Who(client) + " (" + v.Who(member) + ")"
	}
	kind, rest, _ := strings.Cut(ref, ":")
	if kind == "operator" {
		kind, rest, _ = strings.Cut(rest, ":")
	}
	b := v.book()
	if kind == "client" {
		if name, ok := b.clients[rest]; ok && name != "" {
			return v.link("clients", name)
		}
		return v.link("clients", rest)
	}
	id, err := uuid.Parse(rest)
	if err != nil {
		if id, err = uuid.Parse(ref); err != nil {
			return template.HTML(template.HTMLEscapeString(ref))
		}
		kind = ""
	}
	if name, ok := b.agents[id]; ok && (kind == "agent" || kind == "") {
		return v.link("agents/"+id.String(), name)
	}
	if name, ok := b.members[id]; ok && (kind == "member" || kind == "") {
		return v.link("members", name)
	}
	if name, ok := b.keys[id]; ok && (kind == "key" || kind == "") {
		return v.link("keys", name)
	}
	return template.HTML(`<span class="muted" title="` + template.HTMLEscapeString(ref) + `">` + template.HTMLEscapeString(v.T("names.removed")) + `</span>`)
}

// Agent renders an employee id as its name linked to its page; the zero id
// reads "unassigned".
func (v *View) Agent(id uuid.UUID) template.HTML {
	if id == uuid.Nil {
		return template.HTML(template.HTMLEscapeString(v.T("task.unassigned")))
	}
	return v.Who("agent:" + id.String())
}

func (v *View) link(sub, text string) template.HTML {
	return template.HTML(`<a href="` + template.HTMLEscapeString(v.Dash(sub)) + `">` + template.HTMLEscapeString(text) + `</a>`)
}

// Set reports whether id names something (is not the zero id).
func (v *View) Set(id uuid.UUID) bool { return id != uuid.Nil }

// AgentName is an employee's name as plain text, for a place already
// inside a link; "removed" when the id names no one.
func (v *View) AgentName(id uuid.UUID) string {
	if name, ok := v.book().agents[id]; ok {
		return name
	}
	return v.T("names.removed")
}
