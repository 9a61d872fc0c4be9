package calls

import (
	"context"
	"time"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// Refuse records who's call of the tool name as refused by d, as Call
// records a policy refusal, for a call an edge refuses before it reaches
// Call (a request whose text cannot be stored). The Answer holds the
// refusal, or Unrecorded when the row could not be made durable.
func (p *Pipeline) Refuse(ctx context.Context, who identity.Principal, name string, d tools.Decision) Answer {
	start := time.Now()
	e := audit.Entry{ID: audit.NewID(), TenantID: who.TenantID, PrincipalKind: string(who.Kind), PrincipalID: who.ID(),
		Tool: name, At: start}
	var a Answer
	refuse(&e, &a, d)
	if err := p.audit.Record(ctx, e); err != nil {
		p.log.ErrorContext(ctx, "audit record failed", "tool", name, "err", err)
		return Answer{Failure: "the audit trail is unavailable; retry later", Entry: e, Unrecorded: true, Elapsed: time.Since(start)}
	}
	a.Entry, a.Elapsed = e, time.Since(start)
	return a
}

// StepUp reports whether the policy refuses who's call of name only for a
// scope the caller could be granted (an external client can then ask its
// member for more), and if so records that refusal (Refuse). It looks at
// the tool alone, before any argument is read.
func (p *Pipeline) StepUp(ctx context.Context, who identity.Principal, name string) (Answer, bool) {
	tool, ok := p.reg.Get(name)
	if !ok {
		return Answer{}, false
	}
	sub, err := p.subjects.Load(ctx, who)
	if err != nil {
		return Answer{}, false
	}
	d := p.reg.Decide(sub, tool, nil)
	if d.Allowed || d.NeedScope == "" {
		return Answer{}, false
	}
	return p.Refuse(ctx, who, name, d), true
}
