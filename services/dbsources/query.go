package dbsources

import (
	"context"
	"slices"
	"time"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/tools"
)

// EventSourceRefused is the audit event of a db_* call naming a source the
// calling employee's settings do not list.
const EventSourceRefused = "db_source_refused"

// maxDescribeTables bounds one describe answer.
const maxDescribeTables = 2000

// Usable is one source as the db_sources_list tool shows it.
type Usable struct {
	Name        string   `json:"name"`
	Driver      Kind     `json:"driver"`
	Description string   `json:"description,omitempty"`
	Schemas     []string `json:"schemas"`
	Tables      []string `json:"tables"`
	Limits      Limits   `json:"limits"`
}

// Usable returns the sources the calling employee's settings name that
// exist, by name.
func (s *Service) Usable(ctx context.Context, sub *tools.Subject) ([]Usable, error) {
	all, err := s.store.List(ctx, sub.Tenant.ID)
	if err != nil {
		return nil, err
	}
	names := allowedNames(sub)
	out := []Usable{}
	for _, src := range all {
		if slices.Contains(names, src.Name) {
			out = append(out, Usable{Name: src.Name, Driver: src.Kind, Description: src.Description,
				Schemas: src.Schemas, Tables: src.Tables, Limits: src.Limits})
		}
	}
	return out, nil
}

// use returns the source name of the caller's, refusing a name its
// settings do not list (audited as EventSourceRefused) and NotFound for a
// listed name the tenant has no source for.
func (s *Service) use(ctx context.Context, sub *tools.Subject, name string) (Source, error) {
	if !slices.Contains(allowedNames(sub), name) {
		return Source{}, tools.Refused(EventSourceRefused,
			"your settings do not list the database source \""+clip(name)+"\"; call db_sources_list for yours, or ask an operator")
	}
	src, err := s.store.SourceByName(ctx, sub.Tenant.ID, name)
	if fault.Is(err, fault.NotFound) {
		return Source{}, fault.New(fault.NotFound, "no database source is named %q", name)
	}
	return src, err
}

func allowedNames(sub *tools.Subject) []string {
	if sub.Agent == nil {
		return nil
	}
	return sub.Agent.Settings.Capabilities.DBSources
}

// Describe lists the schemas, tables and columns of a source the caller
// may use, within its allow lists.
func (s *Service) Describe(ctx context.Context, sub *tools.Subject, name string) (Source, Schema, error) {
	src, d, t, err := s.prepare(ctx, sub, name)
	if err != nil {
		return src, Schema{}, err
	}
	release, err := s.acquire(src)
	if err != nil {
		return src, Schema{}, err
	}
	defer release()
	sc, err := d.Describe(ctx, t, maxDescribeTables)
	return src, sc, err
}

// Outcome is one query or explain: the answer, the time it took and the
// source it ran on.
type Outcome struct {
	Source  Source
	Answer  Answer
	Elapsed time.Duration
}

// Query runs one read-only statement on a source the caller may use.
// explain asks for the plan instead of the rows.
func (s *Service) Query(ctx context.Context, sub *tools.Subject, name, sql string, explain bool) (Outcome, error) {
	src, d, t, err := s.prepare(ctx, sub, name)
	if err != nil {
		return Outcome{Source: src}, err
	}
	if err := CheckStatement(src.Kind, sql); err != nil {
		return Outcome{Source: src}, err
	}
	release, err := s.acquire(src)
	if err != nil {
		return Outcome{Source: src}, err
	}
	defer release()
	start := time.Now()
	var a Answer
	if explain {
		a, err = d.Explain(ctx, t, sql)
	} else {
		a, err = d.Query(ctx, t, sql)
	}
	return Outcome{Source: src, Answer: a, Elapsed: time.Since(start)}, err
}

func (s *Service) prepare(ctx context.Context, sub *tools.Subject, name string) (Source, Driver, Target, error) {
	src, err := s.use(ctx, sub, name)
	if err != nil {
		return src, nil, Target{}, err
	}
	d, err := s.driver(src.Kind)
	if err != nil {
		return src, nil, Target{}, err
	}
	t, err := s.target(src)
	return src, d, t, err
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
