package upstreams

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// Bounds of a server's limits, and their defaults.
var (
	DefaultLimits = Limits{Timeout: 30 * time.Second, MaxConcurrent: 8, MaxResultBytes: 1 << 20}
	maxLimits     = Limits{Timeout: 300 * time.Second, MaxConcurrent: 64, MaxResultBytes: 8 << 20}
	minLimits     = Limits{Timeout: 100 * time.Millisecond, MaxConcurrent: 1, MaxResultBytes: 1 << 10}
)

// Caps on what a tenant and a server may hold.
const (
	maxServers     = 100
	maxSecrets     = 64
	maxSecretBytes = 16 << 10
	maxCommand     = 64
	maxArgBytes    = 1024
	maxAllowHosts  = 64
	// MaxTools is the most tools one server's refresh keeps.
	MaxTools = 2000
	// maxToolDescription and maxSchemaBytes cap what a refresh stores of
	// one tool; a larger schema is refused.
	maxToolDescription = 2048
	maxSchemaBytes     = 64 << 10
)

var (
	nameRE       = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)
	secretNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,127}$`)
	hostRE       = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$`)
	imageRE      = regexp.MustCompile(`^[a-z0-9][a-z0-9._/:@-]{0,254}$`)
)

// ValidName reports whether name may name a server: 1-32 lower-case
// letters, digits or '-', starting with a letter. No '_', so
// mcp__<server>__<tool> always splits one way.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// reservedNames are the names Visor's own tools go by.
var reservedNames = []string{"visor"}

// Input is what an operator (or an employee's mcp_manage) gives to save a
// server.
type Input struct {
	Name       string
	Transport  Transport
	URL        string
	Image      string
	Command    []string
	AllowHosts []string
	Auth       Auth
	Limits     Limits
	// Description is the operator's note, at most 500 bytes.
	Description string
	// Disabled saves the server switched off.
	Disabled bool
}

// Check validates limits, filling zero fields with the defaults.
func (l *Limits) Check() error {
	if l.Timeout == 0 {
		l.Timeout = DefaultLimits.Timeout
	}
	if l.MaxConcurrent == 0 {
		l.MaxConcurrent = DefaultLimits.MaxConcurrent
	}
	if l.MaxResultBytes == 0 {
		l.MaxResultBytes = DefaultLimits.MaxResultBytes
	}
	switch {
	case l.Timeout < minLimits.Timeout || l.Timeout > maxLimits.Timeout:
		return fault.New(fault.Invalid, "timeout_ms must be %d-%d", minLimits.Timeout.Milliseconds(), maxLimits.Timeout.Milliseconds())
	case l.MaxConcurrent < minLimits.MaxConcurrent || l.MaxConcurrent > maxLimits.MaxConcurrent:
		return fault.New(fault.Invalid, "max_concurrent must be %d-%d", minLimits.MaxConcurrent, maxLimits.MaxConcurrent)
	case l.MaxResultBytes < minLimits.MaxResultBytes || l.MaxResultBytes > maxLimits.MaxResultBytes:
		return fault.New(fault.Invalid, "max_result_bytes must be %d-%d", minLimits.MaxResultBytes, maxLimits.MaxResultBytes)
	}
	return nil
}

// checkShape validates what in says about how to reach the server (not
// its URL's destination, which the service checks with the outbound
// guard).
func (in *Input) checkShape() error {
	if len(in.Description) > 500 {
		return fault.New(fault.Invalid, "description must be at most 500 bytes")
	}
	switch {
	case in.Transport.Remote():
		if in.URL == "" || in.Image != "" || len(in.Command) > 0 || len(in.AllowHosts) > 0 {
			return fault.New(fault.Invalid, "a %s server needs url and takes no image, command or allow_hosts", in.Transport)
		}
	case in.Transport == Stdio:
		if err := in.checkStdio(); err != nil {
			return err
		}
	default:
		return fault.New(fault.Invalid, "transport must be streamable_http, sse or stdio")
	}
	switch in.Auth.Kind {
	case "", AuthNone:
		in.Auth = Auth{Kind: AuthNone}
	case AuthOAuth, AuthClientCredentials:
		if !in.Transport.Remote() {
			return fault.New(fault.Invalid, "OAuth is for remote servers; give a stdio server its credentials with env_set")
		}
		if len(in.Auth.Scopes) > 32 || slices.ContainsFunc(in.Auth.Scopes, func(s string) bool { return s == "" || len(s) > 200 || strings.ContainsAny(s, " \t\r\n\"") }) {
			return fault.New(fault.Invalid, "auth.scopes holds at most 32 scopes of 1-200 bytes without spaces or quotes")
		}
		if len(in.Auth.ClientID) > 2000 {
			return fault.New(fault.Invalid, "auth.client_id must be at most 2000 bytes")
		}
	default:
		return fault.New(fault.Invalid, "auth.kind must be none, oauth or client_credentials")
	}
	return in.Limits.Check()
}

func (in *Input) checkStdio() error {
	if in.URL != "" {
		return fault.New(fault.Invalid, "a stdio server takes image and command, not url")
	}
	if !imageRE.MatchString(in.Image) {
		return fault.New(fault.Invalid, "image must be an image reference (lower-case letters, digits and ._/:@-) of at most 255 bytes")
	}
	if len(in.Command) > maxCommand {
		return fault.New(fault.Invalid, "command holds at most %d arguments", maxCommand)
	}
	for _, a := range in.Command {
		if a == "" || len(a) > maxArgBytes || strings.ContainsRune(a, 0) {
			return fault.New(fault.Invalid, "each command argument must be 1-%d bytes without NUL", maxArgBytes)
		}
	}
	if len(in.AllowHosts) > maxAllowHosts {
		return fault.New(fault.Invalid, "allow_hosts holds at most %d hosts", maxAllowHosts)
	}
	for i, h := range in.AllowHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if !hostRE.MatchString(h) || len(h) > 253 {
			return fault.New(fault.Invalid, "allow_hosts: %q must be a host name such as api.example.com (no scheme, port or address)", h)
		}
		in.AllowHosts[i] = h
	}
	return nil
}

// errImageRefused marks the refusal of a stdio image off the tenant's
// list: the operator's to fix, not the server's failure.
var errImageRefused = errors.New("image not allowed")

// checkImage refuses a stdio server's image that is not on its tenant's
// allow list, with code: Invalid when saving, Forbidden when calling.
func (s *Service) checkImage(ctx context.Context, tenantID uuid.UUID, image string, code fault.Code) error {
	var list []string
	if s.cfg.StdioImages != nil {
		var err error
		if list, err = s.cfg.StdioImages(ctx, tenantID); err != nil {
			return err
		}
	}
	if slices.Contains(list, image) {
		return nil
	}
	return fault.Newf(code, errImageRefused, "image %s is not on the tenant's allow list of stdio images (settings.mcp_stdio_images, "+
		"managed with `visor tenant stdio-images`); an administrator adds it there, and to the stdio worker's VISOR_MCP_STDIO_IMAGES", image)
}

// checkSecret validates a secret's kind, name and value.
func checkSecret(kind SecretKind, name, value string) error {
	switch kind {
	case SecretEnv, SecretHeader, SecretClientSecret:
	default:
		return fault.New(fault.Invalid, "kind must be env or header")
	}
	if !secretNameRE.MatchString(name) {
		return fault.New(fault.Invalid, "name must be 1-128 letters, digits, '_' or '-', starting with a letter or '_'")
	}
	if len(value) > maxSecretBytes || strings.ContainsAny(value, "\x00\r\n") {
		return fault.New(fault.Invalid, "value must be at most %d bytes without NUL or line breaks", maxSecretBytes)
	}
	if kind == SecretHeader && isHopHeader(name) {
		return fault.New(fault.Invalid, "header %s is set by Visor's HTTP client and cannot be configured", name)
	}
	return nil
}

// isHopHeader reports the headers Visor's client or the MCP transport set
// themselves.
func isHopHeader(name string) bool {
	switch strings.ToLower(name) {
	case "host", "content-length", "content-type", "accept", "connection", "transfer-encoding", "mcp-session-id",
		"mcp-protocol-version", "last-event-id", "te", "upgrade", "cookie":
		return true
	}
	return false
}
