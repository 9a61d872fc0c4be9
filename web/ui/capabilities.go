package ui

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// The settings editor has two views of one document: labelled controls
// for the common capabilities, and the JSON (the advanced view). The
// controls' form carries the JSON it was drawn from and changes only the
// fields it shows, so both views preview and save through the same path.

// capabilitySwitch is one on/off capability the controls show.
type capabilitySwitch struct {
	Field, Label string
	get          func(*identity.AgentSettings) *bool
}

// CapabilitySwitches are the capabilities the controls show as check
// boxes, in order.
var capabilitySwitches = []capabilitySwitch{
	{"os_native", "agent.cap.os_native", func(s *identity.AgentSettings) *bool { return &s.Capabilities.OSNative }},
	{"recording", "agent.cap.recording", func(s *identity.AgentSettings) *bool { return &s.Capabilities.Recording }},
	{"system_operator", "agent.cap.system_operator", func(s *identity.AgentSettings) *bool { return &s.Capabilities.SystemOperator }},
	{"codrive", "agent.cap.codrive", func(s *identity.AgentSettings) *bool { return &s.Capabilities.Codrive }},
	{"computer_use", "agent.cap.computer_use", func(s *identity.AgentSettings) *bool { return &s.Capabilities.ComputerUse }},
	{"computer_use_workspace", "agent.cap.computer_use_workspace", func(s *identity.AgentSettings) *bool { return &s.Capabilities.ComputerUseConfig.Workspace }},
}

// permissionChoice is one listed-but-refused permission the controls show
// as a select: the default (allowed), or refused.
type permissionChoice struct {
	Field, Label string
	get          func(*identity.Permissions) **bool
}

var permissionChoices = []permissionChoice{
	{"can_create_agents", "agent.perm.can_create_agents", func(p *identity.Permissions) **bool { return &p.CanCreateAgents }},
	{"can_send_cross_agent", "agent.perm.can_send_cross_agent", func(p *identity.Permissions) **bool { return &p.CanSendCrossAgent }},
	{"can_schedule_tasks", "agent.perm.can_schedule_tasks", func(p *identity.Permissions) **bool { return &p.CanScheduleTasks }},
	{"can_modify_own_skills", "agent.perm.can_modify_own_skills", func(p *identity.Permissions) **bool { return &p.CanModifyOwnSkills }},
}

// CapabilityControl is one control as the template draws it.
type CapabilityControl struct {
	Field, Label string
	On           bool // a switch: checked; a permission: refused
}

// Switches returns the check boxes for s.
func (v *View) Switches(s identity.AgentSettings) []CapabilityControl {
	var out []CapabilityControl
	for _, c := range capabilitySwitches {
		out = append(out, CapabilityControl{Field: c.Field, Label: c.Label, On: *c.get(&s)})
	}
	return out
}

// Refusals returns the permission selects for s; On marks a refused one.
func (v *View) Refusals(s identity.AgentSettings) []CapabilityControl {
	var out []CapabilityControl
	for _, c := range permissionChoices {
		on := false
		if s.Permissions != nil {
			p := *c.get(s.Permissions)
			on = p != nil && !*p
		}
		out = append(out, CapabilityControl{Field: c.Field, Label: c.Label, On: on})
	}
	return out
}

// DeniedList writes the denied tools as the controls' text field shows them.
func (v *View) DeniedList(s identity.AgentSettings) string {
	return strings.Join(s.Capabilities.DeniedTools, ", ")
}

// applyControls changes s as the controls' form says: every switch, every
// permission (refused, or back to the default) and the denied tools.
func applyControls(c echo.Context, s *identity.AgentSettings) error {
	for _, sw := range capabilitySwitches {
		*sw.get(s) = c.FormValue("cap_"+sw.Field) == "on"
	}
	for _, pc := range permissionChoices {
		switch c.FormValue("perm_" + pc.Field) {
		case "", "default":
			if s.Permissions != nil {
				*pc.get(s.Permissions) = nil
			}
		case "refused":
			if s.Permissions == nil {
				s.Permissions = &identity.Permissions{}
			}
			refused := false
			*pc.get(s.Permissions) = &refused
		default:
			return fault.New(fault.Invalid, "perm_%s must be default or refused", pc.Field)
		}
	}
	if s.Permissions != nil && *s.Permissions == (identity.Permissions{}) {
		s.Permissions = nil
	}
	var denied []string
	for _, t := range strings.FieldsFunc(c.FormValue("denied_tools"), func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		if t = strings.TrimSpace(t); t != "" {
			denied = append(denied, t)
		}
	}
	s.Capabilities.DeniedTools = denied
	return nil
}
