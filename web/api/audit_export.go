package api

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
)

// Export formats of the audit trail.
const (
	ExportJSONL = "jsonl" // one AuditEvent JSON object per line
	ExportCSV   = "csv"   // a header row, then one row per event
)

// exportPage is how many rows an export reads at a time: its memory is
// bounded by one page, however many rows match.
const exportPage = 1000

// ExportFormatOf checks an export format; "" is JSON Lines.
func ExportFormatOf(s string) (string, error) {
	switch s {
	case "", ExportJSONL:
		return ExportJSONL, nil
	case ExportCSV:
		return ExportCSV, nil
	}
	return "", fault.New(fault.Invalid, "format must be %s or %s", ExportJSONL, ExportCSV)
}

// csvHeader names the CSV columns, in AuditEvent's JSON names.
var csvHeader = []string{"id", "at", "principal_kind", "principal_id", "tool", "outcome", "code", "event_type", "message",
	"latency_us", "source", "action", "object", "change", "args_digest"}

func csvRow(e AuditEvent) []string {
	return []string{e.ID.String(), e.At.UTC().Format(time.RFC3339Nano), e.PrincipalKind, cell(e.PrincipalID), cell(e.Tool), e.Outcome,
		strconv.FormatInt(e.Code, 10), cell(e.EventType), cell(e.Message), strconv.FormatInt(e.LatencyUS, 10), e.Source,
		cell(e.Action), cell(e.Object), cell(e.Change), cell(e.ArgsDigest)}
}

// cell keeps a spreadsheet from reading a value as a formula: text that
// begins with = + - @ or a tab or carriage return gets a leading
// apostrophe. Names and messages in the trail can come from callers.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// ExportAudit writes every row of tenantID matching f to w in format,
// newest first, reading one page at a time so memory stays bounded. An
// error before the first byte is returned for the caller to render; once
// the body has started, a failure ends it early (the headers are out).
func ExportAudit(ctx context.Context, w http.ResponseWriter, store audit.Store, tenantID uuid.UUID, f audit.Filter, format string) error {
	f.Limit, f.Before = exportPage, uuid.Nil
	rows, err := store.List(ctx, tenantID, f)
	if err != nil {
		return err
	}
	flush := func() {
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	write := exportWriter(w, format)
	if format == ExportCSV {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="audit.csv"`)
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Content-Disposition", `attachment; filename="audit.jsonl"`)
	}
	w.WriteHeader(http.StatusOK)
	for {
		if write(rows) != nil {
			return nil
		}
		flush()
		if len(rows) < f.Limit {
			return nil
		}
		f.Before = rows[len(rows)-1].ID
		if rows, err = store.List(ctx, tenantID, f); err != nil {
			return nil // the truncated export is all that can be said now
		}
	}
}

// exportWriter returns the function that writes one page of rows in
// format; CSV starts with its header.
func exportWriter(w http.ResponseWriter, format string) func([]audit.Entry) error {
	if format != ExportCSV {
		enc := json.NewEncoder(w)
		return func(rows []audit.Entry) error {
			for _, e := range rows {
				if err := enc.Encode(auditOut(e)); err != nil {
					return err
				}
			}
			return nil
		}
	}
	cw := csv.NewWriter(w)
	header := true
	return func(rows []audit.Entry) error {
		if header {
			header = false
			if err := cw.Write(csvHeader); err != nil {
				return err
			}
		}
		for _, e := range rows {
			if err := cw.Write(csvRow(auditOut(e))); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	}
}
