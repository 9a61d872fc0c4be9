package workspace

import (
	"context"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/secrets"
)

// EnvSource lists the sealed variables of an employee's Skills (every
// Skill's for skill "").
type EnvSource interface {
	SkillEnv(ctx context.Context, tenantID, agentID uuid.UUID, skill string) ([]EnvVar, error)
}

// OpenSkillEnv opens the variables of one Skill for a command that runs
// with it. The workspace worker calls it: the values are read from
// Postgres and opened there, so they never travel in a worker-plane
// payload.
func OpenSkillEnv(ctx context.Context, src EnvSource, keys *secrets.Keyring, tenantID, agentID uuid.UUID, skill string) (map[string]string, error) {
	vars, err := src.SkillEnv(ctx, tenantID, agentID, skill)
	if err != nil || len(vars) == 0 {
		return nil, err
	}
	if keys == nil {
		return nil, fault.New(fault.Unavailable, "skill %s has variables but no secret key is configured on the workspace worker to open them", skill)
	}
	env := make(map[string]string, len(vars))
	for _, v := range vars {
		plain, err := keys.Open(v.Sealed, envContext(tenantID, agentID, skill, v.Name))
		if err != nil {
			return nil, fault.Newf(fault.Unavailable, err, "skill %s: variable %s cannot be opened with the configured keys", skill, v.Name)
		}
		env[v.Name] = string(plain)
	}
	return env, nil
}

// Redactor replaces the values of an employee's Skill variables (four
// bytes or longer) with [redacted:NAME]; nil when there is nothing to
// replace.
func Redactor(ctx context.Context, src EnvSource, keys *secrets.Keyring, tenantID, agentID uuid.UUID) (*strings.Replacer, error) {
	values, err := RedactedValues(ctx, src, keys, tenantID, agentID)
	if err != nil || len(values) == 0 {
		return nil, err
	}
	type pair struct{ value, name string }
	pairs := make([]pair, 0, len(values))
	for v, name := range values {
		pairs = append(pairs, pair{v, name})
	}
	sort.Slice(pairs, func(i, j int) bool { return len(pairs[i].value) > len(pairs[j].value) })
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.value, p.name)
	}
	return strings.NewReplacer(args...), nil
}

// RedactedValues maps the values of an employee's Skill variables (four
// bytes or longer) to what replaces them, [redacted:NAME]; empty when
// there is none (or no key to open them).
func RedactedValues(ctx context.Context, src EnvSource, keys *secrets.Keyring, tenantID, agentID uuid.UUID) (map[string]string, error) {
	vars, err := src.SkillEnv(ctx, tenantID, agentID, "")
	if err != nil || len(vars) == 0 || keys == nil {
		return nil, err
	}
	out := map[string]string{}
	for _, v := range vars {
		plain, err := keys.Open(v.Sealed, envContext(tenantID, agentID, v.Skill, v.Name))
		if err != nil || len(plain) < 4 { // too short to redact without mangling ordinary output
			continue
		}
		out[string(plain)] = "[redacted:" + v.Name + "]"
	}
	return out, nil
}

// Redact replaces the values r names in the command lines and output an
// answer carries.
func (a *Answer) Redact(r *strings.Replacer) {
	if r == nil {
		return
	}
	if a.Session != nil {
		a.Session.Output, a.Session.Cmd = r.Replace(a.Session.Output), r.Replace(a.Session.Cmd)
	}
	for i := range a.Sessions {
		a.Sessions[i].Output, a.Sessions[i].Cmd = r.Replace(a.Sessions[i].Output), r.Replace(a.Sessions[i].Cmd)
	}
}

// envContext binds a sealed Skill variable to its owner and name.
func envContext(tenantID, agentID uuid.UUID, skill, name string) string {
	return "skill_env:" + tenantID.String() + ":" + agentID.String() + ":" + skill + ":" + name
}
