package identity

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/visorhq/visor/services/fault"
)

// Limits on what a caller may put in settings.
const (
	maxListEntries = 256
	maxEntryBytes  = 200
)

// stdioImageRE is an image reference as a stdio MCP server names one.
var stdioImageRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._/:@-]{0,199}$`)

// ValidateAgentSettings checks the sizes of every list in s.
func ValidateAgentSettings(s AgentSettings) error {
	c := s.Capabilities
	lists := map[string][]string{
		"allowed_tools": c.AllowedTools, "denied_tools": c.DeniedTools, "db_sources": c.DBSources,
		"scoped_tools": c.ScopedTools, "computer_use_config.allowed_domains": c.ComputerUseConfig.AllowedDomains,
		"workspace_config.allowed_hosts": c.WorkspaceConfig.AllowedHosts,
	}
	for name, l := range lists {
		if err := checkList(name, l); err != nil {
			return err
		}
	}
	if m := c.ComputerUseConfig.MaxActions; m < 0 || m > 1000 {
		return fault.New(fault.Invalid, "computer_use_config.max_actions must be 0-1000")
	}
	return nil
}

// CheckTimeZone refuses, with fault.Invalid, a name that is not an IANA
// time zone name (at most 64 bytes; "Local", the server's, is refused).
func CheckTimeZone(name string) error {
	if _, err := time.LoadLocation(name); err != nil || name == "" || len(name) > 64 || name == "Local" {
		return fault.New(fault.Invalid, "time_zone must be an IANA time zone name such as Europe/Paris")
	}
	return nil
}

// ValidateTenantSettings checks the sizes of every list in s.
func ValidateTenantSettings(s TenantSettings) error {
	if len(s.ServerName) > 64 {
		return fault.New(fault.Invalid, "server_name must be at most 64 bytes")
	}
	if err := checkList("external_whitelist", s.ExternalWhitelist); err != nil {
		return err
	}
	if len(s.Delegation.Pairs) > maxListEntries {
		return fault.New(fault.Invalid, "delegation.pairs holds at most %d pairs", maxListEntries)
	}
	if s.TimeZone != "" {
		if err := CheckTimeZone(s.TimeZone); err != nil {
			return err
		}
	}
	if len(s.SandboxImage) > 255 || strings.ContainsFunc(s.SandboxImage, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return fault.New(fault.Invalid, "sandbox_image must be an image reference of at most 255 printable ASCII characters")
	}
	if err := checkList("mcp_stdio_images", s.MCPStdioImages); err != nil {
		return err
	}
	for i, img := range s.MCPStdioImages {
		if !stdioImageRE.MatchString(img) {
			return fault.New(fault.Invalid, "%s", fmt.Sprintf("mcp_stdio_images holds %q (entry %d), which is not an image reference (lower-case letters, digits and ._/:@-)", img, i))
		}
	}
	switch s.ScriptWhenUnavailable {
	case "", "run_unsandboxed":
	default:
		return fault.New(fault.Invalid, `script_when_unavailable must be "" or "run_unsandboxed"`)
	}
	return nil
}

func checkList(name string, l []string) error {
	if len(l) > maxListEntries {
		return fault.New(fault.Invalid, "%s holds at most %d entries", name, maxListEntries)
	}
	for i, e := range l {
		if e == "" || len(e) > maxEntryBytes {
			return fault.New(fault.Invalid, "%s", fmt.Sprintf("%s[%d] must be 1-%d bytes", name, i, maxEntryBytes))
		}
	}
	return nil
}
