package upstreams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/tools"
)

// ParseName reads a tool reference: <server>:<tool>, or the policy's
// mcp__<server>__<tool>.
func ParseName(ref string) (server, tool string, err error) {
	if rest, ok := strings.CutPrefix(ref, tools.UpstreamPrefix); ok {
		server, tool, ok = strings.Cut(rest, "__")
		if ok && ValidName(server) && toolNameOK(tool) {
			return server, tool, nil
		}
	} else if server, tool, ok = strings.Cut(ref, ":"); ok && ValidName(server) && toolNameOK(tool) {
		return server, tool, nil
	}
	return "", "", fault.New(fault.Invalid, "name must be <server>:<tool> as mcp_tool_search returns it, e.g. github:create_issue")
}

// Inspect returns one tool with its full input and output schemas, if the
// subject may call it. A tool the policy refuses, or of a disabled or
// missing server, is refused as a hidden tool (tools.RefusalError).
func (s *Service) Inspect(ctx context.Context, sub *tools.Subject, ref string) (Tool, error) {
	_, t, err := s.lookup(ctx, sub, ref)
	return t, err
}

func (s *Service) lookup(ctx context.Context, sub *tools.Subject, ref string) (Server, Tool, error) {
	server, tool, err := ParseName(ref)
	if err != nil {
		return Server{}, Tool{}, err
	}
	if d := tools.DecideUpstream(sub, FullName(server, tool)); !d.Allowed {
		return Server{}, Tool{}, &tools.RefusalError{Decision: d}
	}
	srv, t, err := s.cfg.Store.Tool(ctx, sub.Principal.TenantID, server, tool)
	switch {
	case fault.Is(err, fault.NotFound):
		return Server{}, Tool{}, unknown(fmt.Sprintf("no upstream tool %s:%s; find tools with mcp_tool_search", server, tool))
	case err != nil:
		return Server{}, Tool{}, err
	case !srv.Enabled:
		return Server{}, Tool{}, unknown(fmt.Sprintf("upstream server %s is disabled", server))
	}
	if srv.Transport == Stdio { // the tenant may have taken the image off its list since
		if err := s.checkImage(ctx, srv.TenantID, srv.Image, fault.Forbidden); err != nil {
			if !errors.Is(err, errImageRefused) {
				return Server{}, Tool{}, err
			}
			s.pool.forget(srv.ID)
			return Server{}, Tool{}, unknown(fault.Message(err))
		}
	}
	return srv, t, nil
}

func unknown(reason string) error {
	return &tools.RefusalError{Decision: tools.Decision{Hidden: true, Code: tools.CodeUnknownTool, Event: tools.EventUnknownTool, Reason: reason}}
}

// Outcome is how an upstream call went, for the answer and the audit row.
type Outcome struct {
	Server, Tool string
	Result       Result
	Elapsed      time.Duration
	// Flags are the injection-scan rules the result's text matched.
	Flags []string
}

// Call calls one upstream tool for the subject: the policy decides on its
// full name, the arguments are checked against the tool's input schema,
// and the call runs within the server's timeout, concurrency limit and
// circuit breaker. The result is passed through with its text fenced as
// outside text. Errors: a tools.RefusalError for a refused or unknown
// tool; Invalid for arguments the schema refuses; RateLimited or
// Unavailable (naming the server) when the server is busy, failing, slow
// or unreachable; TooLarge for a result over the server's cap.
func (s *Service) Call(ctx context.Context, sub *tools.Subject, ref string, args map[string]any) (Outcome, error) {
	srv, t, err := s.lookup(ctx, sub, ref)
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{Server: srv.Name, Tool: t.Name}
	if args == nil {
		args = map[string]any{}
	}
	raw, err := checkArgs(t, args)
	if err != nil {
		return out, err
	}
	done, err := s.guards.enter(srv)
	if err != nil {
		return out, err
	}
	start := time.Now()
	res, failed, err := s.run(ctx, srv, tokenMember(srv, sub.Principal), t.Name, raw)
	out.Elapsed = time.Since(start)
	done(failed)
	if err != nil {
		return out, err
	}
	if n := len(res.Content) + len(res.Structured); n > srv.Limits.MaxResultBytes {
		return out, fault.New(fault.TooLarge, "upstream server %s answered %d bytes, over its cap of %d", srv.Name, n, srv.Limits.MaxResultBytes)
	}
	out.Result, out.Flags, err = fence(srv.Name, t.Name, res)
	return out, err
}

// run calls the tool on srv's kept session. failed reports a failure at
// the transport (it counts towards the breaker and drops the session).
func (s *Service) run(ctx context.Context, srv Server, member uuid.UUID, tool string, args json.RawMessage) (Result, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, srv.Limits.Timeout)
	defer cancel()
	sess, err := s.session(ctx, srv, member)
	if fault.Is(err, fault.Forbidden) && (errors.Is(err, errNotConnected) || errors.Is(err, errImageRefused)) {
		return Result{}, false, err // the caller's to fix, not the server's failure
	}
	if err != nil {
		return Result{}, true, timedOut(ctx, srv, err)
	}
	res, err := sess.Call(ctx, tool, args)
	if err == nil {
		return res, false, nil
	}
	if fault.Is(err, fault.Invalid) {
		return Result{}, false, err // the server's answer to bad arguments
	}
	s.pool.forgetMember(srv.ID, member)
	return Result{}, true, timedOut(ctx, srv, err)
}

// timedOut names the server and its timeout when ctx ran out, and makes
// any uncoded error Unavailable with the server's name.
func timedOut(ctx context.Context, srv Server, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fault.Newf(fault.Unavailable, err, "upstream server %s did not answer within %s", srv.Name, srv.Limits.Timeout)
	}
	if c := fault.CodeOf(err); c != fault.Internal {
		return err
	}
	return fault.Newf(fault.Unavailable, err, "upstream server %s failed: %s", srv.Name, err.Error())
}
