package dbsources

import (
	"context"
	"fmt"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// Register declares the family's four tools (catalog.Family), all behind
// the db_sources gate: an employee whose settings name no source sees none
// of them.
func (s *Service) Register(reg *tools.Registry) {
	src := tools.Param{Name: "source", Type: "string", Required: true, Description: "Name of a database source from db_sources_list."}
	sql := tools.Param{Name: "sql", Type: "string", Required: true, Secret: true, Audit: tools.AuditHash,
		Description: "One read statement (SELECT, WITH, VALUES or TABLE), at most 32 KiB, no ';' between statements."}
	ro := tools.Annotations{ReadOnly: true, Idempotent: true}
	declare := func(name, title, desc string, params []tools.Param, h tools.Handler) {
		a := ro
		a.Title = title
		reg.Register(tools.Tool{Name: name, Description: desc, Params: params, Scope: identity.ScopeToolsRead,
			Family: "db", Gate: tools.GateDBSources, ProcessAgent: true, Annotations: a, Handler: h})
	}
	declare("db_sources_list", "List my database sources",
		"List the database sources you may query: name, driver, allow lists and limits.", nil, s.listTool)
	declare("db_describe", "Describe a database source",
		"List a database source's tables and views with their columns (within its allow lists), fenced as data.",
		[]tools.Param{src}, s.describeTool)
	declare("db_query", "Run a read-only query",
		"Run one read-only SQL statement on a database source; rows come back typed and fenced as data, cut at the source's caps (truncated says which).",
		[]tools.Param{src, sql}, func(ctx context.Context, c tools.Call) (*tools.Result, error) { return s.queryTool(ctx, c, false) })
	declare("db_explain", "Explain a query's plan",
		"Show the plan a database source would use for one read statement, without running it.",
		[]tools.Param{src, sql}, func(ctx context.Context, c tools.Call) (*tools.Result, error) { return s.queryTool(ctx, c, true) })
}

func (s *Service) listTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	list, err := s.Usable(ctx, c.Subject)
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf("%d database source(s) you may query.", len(list))
	if len(list) == 0 {
		text = "No database source you may query exists; the sources your settings name may have been removed."
	}
	return &tools.Result{Text: text, Structured: map[string]any{"sources": list}}, nil
}

func (s *Service) describeTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	name, _ := tools.String(c.Args, "source")
	_, sc, err := s.Describe(ctx, c.Subject, name)
	if err != nil {
		return nil, &tools.NotedError{Note: map[string]any{"source": name}, Err: err}
	}
	body, flags, err := fenced(name, sc, schemaText(sc))
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf("%d table(s) of %s (truncated: %t).\n%s", len(sc.Tables), name, sc.Truncated, body)
	return &tools.Result{Text: text, Note: map[string]any{"source": name, "tables": len(sc.Tables)},
		Structured: map[string]any{"source": name, "tables": sc.Tables, "truncated": sc.Truncated, "injection_flags": flags}}, nil
}

func (s *Service) queryTool(ctx context.Context, c tools.Call, explain bool) (*tools.Result, error) {
	name, _ := tools.String(c.Args, "source")
	sql, _ := tools.String(c.Args, "sql")
	out, err := s.Query(ctx, c.Subject, name, sql, explain)
	note := map[string]any{"source": name, "rows": len(out.Answer.Rows), "duration_ms": out.Elapsed.Milliseconds()}
	if err != nil {
		return nil, &tools.NotedError{Note: note, Err: err}
	}
	a := out.Answer
	if a.Truncated {
		note["truncated_by"] = a.Cap
	}
	body, flags, err := fenced(name, map[string]any{"columns": a.Columns, "rows": a.Rows}, answerText(a))
	if err != nil {
		return nil, err
	}
	ms := float64(out.Elapsed.Microseconds()) / 1000
	head := fmt.Sprintf("%d row(s) in %.1f ms.", len(a.Rows), ms)
	if a.Truncated {
		head = fmt.Sprintf("%d row(s) in %.1f ms; truncated by %s.", len(a.Rows), ms, a.Cap)
	}
	return &tools.Result{Text: head + "\n" + body, Note: note, Structured: map[string]any{
		"source": name, "columns": a.Columns, "rows": a.Rows, "row_count": len(a.Rows), "truncated": a.Truncated,
		"cap": a.Cap, "elapsed_ms": ms, "injection_flags": flags}}, nil
}
