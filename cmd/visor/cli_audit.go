package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os/user"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
)

// cliRecord is what a CLI action that changes state learns as it runs, for
// its audit row: the tenant it acted in and the object it acted on.
type cliRecord struct {
	tenant uuid.UUID
	object string
}

type cliRecordKey struct{}

// noteTenant tells the running action's audit row its tenant.
func noteTenant(ctx context.Context, id uuid.UUID) {
	if r, ok := ctx.Value(cliRecordKey{}).(*cliRecord); ok {
		r.tenant = id
	}
}

// noteObject tells the running action's audit row its object ("kind:id").
func noteObject(ctx context.Context, kind string, id uuid.UUID) {
	if r, ok := ctx.Value(cliRecordKey{}).(*cliRecord); ok {
		r.object = kind + ":" + id.String()
	}
}

// recorded runs a CLI action that changes state (ac.audit names it, with
// the admin API's operation id for the same change) and writes its audit
// row: source cli, the operating-system user who ran it, the object, the
// flags and arguments it was given with every secret masked, and how it
// ended. An action that failed before its tenant was known writes no row.
// The row is durable before the command returns; when it cannot be
// written the command fails, saying the change itself was made.
func recorded(ctx context.Context, a *app, ac action, fs *flag.FlagSet, args []string, run func(context.Context) error) error {
	rec := &cliRecord{}
	if err := a.start(ctx, a.stores.audit); err != nil {
		return err
	}
	start := time.Now()
	err := run(context.WithValue(ctx, cliRecordKey{}, rec))
	if rec.tenant == uuid.Nil {
		return err
	}
	given := map[string]any{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = f.Value.String() })
	if len(args) > 0 {
		given["args"] = args
	}
	body, _ := json.Marshal(given)
	o := audit.Operator{TenantID: rec.tenant, Source: audit.SourceCLI, PrincipalKind: "operator", PrincipalID: cliActor(),
		Action: ac.audit, Object: rec.object, Body: body, Status: http.StatusOK, Latency: time.Since(start)}
	if err != nil {
		o.Status, o.Message = cliStatus(err), err.Error()
	}
	e := o.Row()
	if rerr := a.stores.audit.Record(context.WithoutCancel(ctx), e); rerr != nil {
		if err != nil {
			return err
		}
		return fmt.Errorf("the change was made, but its audit row could not be written: %w", rerr)
	}
	return err
}

// cliStatus is the HTTP status a failed action's row carries, so its
// outcome reads as the admin API's would (audit.OutcomeOf): that of its
// fault code; the CLI's own checks of its flags are a 400 (rejected).
func cliStatus(err error) int {
	var fe *fault.Error
	if !errors.As(err, &fe) {
		return http.StatusBadRequest
	}
	return fault.HTTPStatus(fe.Code)
}

// cliActor names who ran the CLI: the deployment itself, on behalf of the
// operating-system user.
func cliActor() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return "operator:system/cli:" + name
}
