package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
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
	change, digest := audit.MaskedChange(body)
	e := audit.Entry{ID: audit.NewID(), TenantID: rec.tenant, PrincipalKind: "operator", PrincipalID: audit.Clean(cliActor()),
		ArgsDigest: digest, Outcome: audit.OutcomeOK, Event: "operator_action", At: time.Now(), Latency: time.Since(start),
		Source: audit.SourceCLI, Action: ac.audit, Object: audit.Clean(rec.object), Change: change}
	if err != nil {
		e.Outcome, e.Code, e.Message = cliOutcome(err), int64(fault.HTTPStatus(fault.CodeOf(err))), audit.Clean(err.Error())
	}
	if rerr := a.stores.audit.Record(context.WithoutCancel(ctx), e); rerr != nil {
		if err != nil {
			return err
		}
		return fmt.Errorf("the change was made, but its audit row could not be written: %w", rerr)
	}
	return err
}

// cliOutcome names how a failed action ended: refused or rejected for a
// caller's mistake (a bad flag, a conflict, a missing object), failed when
// the deployment failed.
func cliOutcome(err error) string {
	var fe *fault.Error
	if !errors.As(err, &fe) {
		return audit.OutcomeRejected // the CLI's own checks of its flags
	}
	switch fe.Code {
	case fault.Forbidden, fault.Unauthorized:
		return audit.OutcomeRefused
	case fault.Internal, fault.Unavailable:
		return audit.OutcomeFailed
	}
	return audit.OutcomeRejected
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
