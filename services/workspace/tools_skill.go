package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

type skillArgs struct {
	Action   string `json:"action"`
	Path     string `json:"path"`
	Name     string `json:"name"`
	Version  int    `json:"version"`
	EnvName  string `json:"env_name"`
	EnvValue string `json:"env_value"`
}

// MaxEnvValue bounds a Skill variable's value.
const MaxEnvValue = 8 << 10

// SkillWrites are the skill_package actions can_modify_own_skills governs.
func SkillWrites(args map[string]any) bool {
	a, _ := args["action"].(string)
	return a != "validate" && a != "env_list"
}

func (s *Service) skillTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	var a skillArgs
	if err := decode(c, &a); err != nil {
		return nil, err
	}
	p := c.Principal()
	switch a.Action {
	case "validate", "install":
		return s.skillInstall(ctx, c, a)
	case "activate", "rollback":
		return s.skillActivate(ctx, p, a)
	case "env_set", "env_unset", "env_list":
		return s.skillEnv(ctx, p, a)
	}
	return nil, fault.New(fault.Invalid, "action must be validate, install, activate, rollback, env_set, env_unset or env_list")
}

// skillInstall packs the folder in the workspace, checks it, and for
// install stores it as the Skill's new active version. Nothing in the
// folder is run.
func (s *Service) skillInstall(ctx context.Context, c tools.Call, a skillArgs) (*tools.Result, error) {
	if a.Path == "" {
		return nil, fault.New(fault.Invalid, "%s needs path, the Skill's folder in your workspace", a.Action)
	}
	ans, err := s.run(ctx, c.Subject, Op{Fetch: &FetchArgs{Path: a.Path, Max: MaxSkillBytes, Folder: true}})
	if err != nil {
		return nil, err
	}
	packed := ans.Fetch.Data
	chk := CheckSkill(packed)
	if a.Action == "validate" {
		text := fmt.Sprintf("valid: %t", chk.Valid)
		if !chk.Valid {
			text += "\n- " + strings.Join(chk.Issues, "\n- ")
		}
		return &tools.Result{Text: text, Structured: chk, Note: map[string]any{"valid": chk.Valid, "size": chk.Size}}, nil
	}
	if !chk.Valid {
		return nil, &tools.NotedError{Note: map[string]any{"valid": false},
			Err: fault.New(fault.Invalid, "the Skill is not valid: %s", strings.Join(chk.Issues, "; "))}
	}
	p := c.Principal()
	sum := sha256.Sum256(packed)
	k := Skill{AgentID: p.AgentID, Name: chk.Name, Description: chk.Description, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(packed))}
	v, err := s.cfg.Skills.AddSkill(ctx, p.TenantID, k, packed)
	if err != nil {
		return nil, err
	}
	k.Version, k.Active = v, true
	return &tools.Result{Text: fmt.Sprintf("installed %s version %d (active); read skill://%s/SKILL.md", k.Name, v, k.Name),
		Structured: map[string]any{"installed": true, "skill": k, "valid": true}, Note: map[string]any{"skill": k.Name, "version": v}}, nil
}

func (s *Service) skillActivate(ctx context.Context, p identity.Principal, a skillArgs) (*tools.Result, error) {
	all, err := s.cfg.Skills.Skills(ctx, p.TenantID, p.AgentID)
	if err != nil {
		return nil, err
	}
	var versions []Skill
	active := 0
	for _, k := range all {
		if k.Name == a.Name {
			versions = append(versions, k)
			if k.Active {
				active = k.Version
			}
		}
	}
	if len(versions) == 0 {
		return nil, fault.New(fault.NotFound, "skill %q is not installed", clip(a.Name))
	}
	want := a.Version
	if a.Action == "rollback" {
		want = 0
		for _, k := range versions {
			if k.Version < active && k.Version > want {
				want = k.Version
			}
		}
		if want == 0 {
			return nil, fault.New(fault.Conflict, "skill %s has no version before %d to roll back to", a.Name, active)
		}
	}
	if !slices.ContainsFunc(versions, func(k Skill) bool { return k.Version == want }) {
		return nil, fault.New(fault.NotFound, "skill %s has no version %d", a.Name, want)
	}
	if err := s.cfg.Skills.ActivateSkill(ctx, p.TenantID, p.AgentID, a.Name, want); err != nil {
		return nil, err
	}
	return &tools.Result{Text: fmt.Sprintf("%s: version %d is active (was %d)", a.Name, want, active),
		Structured: map[string]any{"name": a.Name, "active_version": want, "previous_version": active, "changed": want != active},
		Note:       map[string]any{"skill": a.Name, "version": want}}, nil
}

func (s *Service) skillEnv(ctx context.Context, p identity.Principal, a skillArgs) (*tools.Result, error) {
	if _, err := s.cfg.Skills.ActiveSkill(ctx, p.TenantID, p.AgentID, a.Name); err != nil {
		return nil, fault.New(fault.NotFound, "skill %q is not installed", clip(a.Name))
	}
	if a.Action == "env_list" {
		vars, err := s.cfg.Skills.SkillEnv(ctx, p.TenantID, p.AgentID, a.Name)
		if err != nil {
			return nil, err
		}
		out := make([]map[string]any, 0, len(vars))
		names := make([]string, 0, len(vars))
		for _, v := range vars {
			out = append(out, map[string]any{"name": v.Name, "set": true})
			names = append(names, v.Name)
		}
		return &tools.Result{Text: fmt.Sprintf("%s: %d variable(s) set: %s (values are never shown)", a.Name, len(vars), strings.Join(names, ", ")),
			Structured: map[string]any{"name": a.Name, "variables": out}}, nil
	}
	if !envNameRE.MatchString(a.EnvName) {
		return nil, fault.New(fault.Invalid, "env_name must be upper-case letters, digits and '_', at most 64")
	}
	if a.Action == "env_unset" {
		removed, err := s.cfg.Skills.UnsetSkillEnv(ctx, p.TenantID, p.AgentID, a.Name, a.EnvName)
		if err != nil {
			return nil, err
		}
		return &tools.Result{Text: fmt.Sprintf("%s %s: removed %t", a.Name, a.EnvName, removed),
			Structured: map[string]any{"name": a.Name, "env_name": a.EnvName, "changed": removed}}, nil
	}
	if a.EnvValue == "" || len(a.EnvValue) > MaxEnvValue || strings.ContainsRune(a.EnvValue, 0) {
		return nil, fault.New(fault.Invalid, "env_value must be 1 byte to 8 KiB, without NUL")
	}
	if s.cfg.Keys == nil {
		return nil, fault.New(fault.Unavailable, "no secret key is configured (VISOR_SECRET_KEYS), so values cannot be sealed")
	}
	sealed, err := s.cfg.Keys.Seal([]byte(a.EnvValue), envContext(p.TenantID, p.AgentID, a.Name, a.EnvName))
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Skills.SetSkillEnv(ctx, p.TenantID, p.AgentID, a.Name, EnvVar{Name: a.EnvName, Sealed: sealed}); err != nil {
		return nil, err
	}
	return &tools.Result{Text: fmt.Sprintf("%s %s is set (sealed; redacted from command output)", a.Name, a.EnvName),
		Structured: map[string]any{"name": a.Name, "env_name": a.EnvName, "set": true, "encrypted": true}}, nil
}

// withSkill points a command at the active version of its Skill. The
// Skill's variables are not opened here: the worker reads and opens them
// itself, so no value crosses the worker plane.
func (s *Service) withSkill(ctx context.Context, sub *tools.Subject, a *ExecArgs) error {
	p := sub.Principal
	k, err := s.cfg.Skills.ActiveSkill(ctx, p.TenantID, p.AgentID, a.Skill)
	if err != nil {
		return fault.New(fault.NotFound, "skill %q is not installed", clip(a.Skill))
	}
	a.SkillRev = k.Version
	return nil
}

// readSkillFile reads a file of an installed Skill (skill://name/path).
func (s *Service) readSkillFile(ctx context.Context, sub *tools.Subject, a ReadArgs) (ReadResult, error) {
	p := sub.Principal
	if p.Kind != identity.KindEmployee {
		return ReadResult{}, errNotEmployee
	}
	name, file, err := ParseSkillPath(a.Path)
	if err != nil {
		return ReadResult{}, err
	}
	k, err := s.cfg.Skills.ActiveSkill(ctx, p.TenantID, p.AgentID, name)
	if err != nil {
		return ReadResult{}, fault.New(fault.NotFound, "skill %q is not installed", name)
	}
	packed, err := s.cfg.Skills.SkillArchive(ctx, p.TenantID, p.AgentID, name, k.Version)
	if err != nil {
		return ReadResult{}, err
	}
	text, err := SkillFile(packed, file)
	if err != nil {
		return ReadResult{}, err
	}
	return SliceLines(SkillScheme+name+"/"+file, text, a.StartLine, a.EndLine)
}

type searchArgs struct {
	Query  string `json:"query"`
	Source string `json:"source"`
	Hub    string `json:"hub"`
	Limit  int    `json:"limit"`
}

var hubs = []string{"anthropic-skills", "github", "clawhub", "lobehub", "skills-sh"}

// unreachable says why a network source cannot be searched.
const unreachable = "needs the public internet, which Visor does not reach for Skill search in this deployment"

func (s *Service) skillSearchTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	var a searchArgs
	if err := decode(c, &a); err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.Query) == "" || len(a.Query) > 200 {
		return nil, fault.New(fault.Invalid, "query must be 1-200 bytes")
	}
	switch {
	case a.Source == "bank" && a.Hub != "":
		return nil, fault.New(fault.Invalid, "hub is not accepted with source=bank")
	case a.Hub != "" && !slices.Contains(hubs, a.Hub):
		return nil, fault.New(fault.Invalid, "hub must be one of %s", strings.Join(hubs, ", "))
	}
	switch a.Source {
	case "github", "hub":
		return nil, fault.New(fault.Unavailable, "source %s %s; search source=bank, or install a Skill from a folder of your workspace with skill_package install", a.Source, unreachable)
	case "", "all", "bank":
	default:
		return nil, fault.New(fault.Invalid, "source must be all, github, hub or bank")
	}
	p := c.Principal()
	found, err := s.cfg.Skills.BankSkills(ctx, p.TenantID, strings.TrimSpace(a.Query), bound(a.Limit, 10, 50))
	if err != nil {
		return nil, err
	}
	results := make([]map[string]any, 0, len(found))
	seen := map[string]bool{}
	var b strings.Builder
	for _, k := range found {
		if seen[k.Name] {
			continue
		}
		seen[k.Name] = true
		mine := k.AgentID == p.AgentID
		results = append(results, map[string]any{"name": k.Name, "description": k.Description, "source": "bank", "version": k.Version, "installed_by_you": mine})
		fmt.Fprintf(&b, "%s (bank): %s\n", k.Name, k.Description)
	}
	out := map[string]any{"results": results}
	head := fmt.Sprintf("%d Skill(s) in this deployment's bank", len(results))
	if a.Source != "bank" {
		out["unsearched_sources"] = []map[string]any{{"source": "github", "reason": unreachable}, {"source": "hub", "reason": unreachable}}
		head += "; github and the hubs were not searched: they " + unreachable
	}
	return &tools.Result{Text: head + "\n" + b.String(), Structured: out, Note: map[string]any{"results": len(results)}}, nil
}
