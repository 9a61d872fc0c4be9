package workspace

import (
	"context"
	"fmt"
	"strings"

	"github.com/visorhq/visor/services/tools"
)

// rules are the operating rules the context tool states.
var rules = []string{
	"Paths are relative to /workspace; '..' and links out of it are refused.",
	"Read before you edit; use file_edit expected_matches so a changed file refuses a stale edit, and dry_run to preview.",
	"exec_command returns session_id when a command runs past wait_ms: follow it with session_observe status and its next_cursor.",
	"Check isError first, then command_ok / exit_code (commands) or valid / changed / written (other tools).",
	"The quota is the size of /workspace: a write past it fails with 'No space left on device' and file_edit refuses it; remove files to make room.",
	"Network: HTTPS to your allowed hosts only, through the workspace proxy; everything else is unreachable.",
	"A Skill is a document: read skill://<name>/SKILL.md, then act with real tools. Installing never runs it.",
	"Track multi-step work with task_manage; complete needs verification evidence.",
	"Hand results back with file_publish; load pictures with view_image rather than printing them.",
}

func (s *Service) contextTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	ws, ref, err := s.target(ctx, c.Subject)
	if err != nil {
		return nil, err
	}
	p := c.Principal()
	skills, err := s.cfg.Skills.Skills(ctx, p.TenantID, p.AgentID)
	if err != nil {
		return nil, err
	}
	active := []map[string]any{}
	for _, k := range skills {
		if k.Active {
			active = append(active, map[string]any{"name": k.Name, "version": k.Version, "description": k.Description, "read": SkillScheme + k.Name + "/SKILL.md"})
		}
	}
	upstreams := []UpstreamServer{}
	if s.cfg.Upstreams != nil {
		if upstreams, err = s.cfg.Upstreams.UpstreamsFor(ctx, c.Subject); err != nil {
			return nil, err
		}
	}
	hosts := ref.AllowedHosts
	if hosts == nil {
		hosts = []string{}
	}
	runtime := map[string]any{"workspace_path": MountPath, "skills_path": "/skills", "os": "linux", "shell": "/bin/sh", "user": "uid 1000, no root",
		"image": s.cfg.Image, "network_allowed_hosts": hosts, "workspace_id": ws.ID, "revision": ws.Revision,
		"bytes_used": ws.BytesUsed, "quota": ws.Quota, "command_timeout_default_ms": DefaultTimeout.Milliseconds(),
		"command_timeout_max_ms": MaxTimeout.Milliseconds(), "output_kept_bytes": MaxOutputKept}
	var b strings.Builder
	fmt.Fprintf(&b, "runtime: linux container, %s (uid 1000), quota %d MiB, used %d bytes, network: %s\n", MountPath, ws.Quota>>20, ws.BytesUsed, orNone(hosts))
	fmt.Fprintf(&b, "skills (%d):", len(active))
	for _, k := range active {
		fmt.Fprintf(&b, " %s", k["name"])
	}
	fmt.Fprintf(&b, "\nupstream MCP servers (%d):", len(upstreams))
	for _, u := range upstreams {
		fmt.Fprintf(&b, " %s", u.Name)
	}
	b.WriteString("\nrules:\n- " + strings.Join(rules, "\n- "))
	return &tools.Result{Text: b.String(), Structured: map[string]any{"runtime": runtime, "skills": active, "upstream_servers": upstreams, "rules": rules}}, nil
}

func orNone(hosts []string) string {
	if len(hosts) == 0 {
		return "none"
	}
	return strings.Join(hosts, ", ")
}
