package knowledge

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"unicode"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// Wiki limits.
const (
	MaxWikiPath    = 200      // bytes of a page path
	MaxWikiContent = 64 << 10 // bytes of a page
	// HostSourcesKept is how many sources a page's host_sources keeps,
	// newest first, across rewrites.
	HostSourcesKept = 20
)

// WikiScope names a wiki.
type WikiScope string

// The two wikis: the calling employee's own and the tenant's shared one.
const (
	ScopeOwn    WikiScope = "own"
	ScopeShared WikiScope = "shared"
)

// WriteWiki writes a page of p's own wiki or of the shared wiki. Any
// host_sources key the writer put in the page's frontmatter is dropped;
// the page's host_sources are the sources Visor recorded.
func (s *Service) WriteWiki(ctx context.Context, p identity.Principal, callID uuid.UUID, scope WikiScope, path, content string) (WikiPage, error) {
	owner, err := s.wikiOwner(p, scope)
	if err != nil {
		return WikiPage{}, err
	}
	if err := checkPath(path); err != nil {
		return WikiPage{}, err
	}
	if err := checkText("content", content, 0, MaxWikiContent); err != nil {
		return WikiPage{}, err
	}
	src, err := s.source(ctx, p, callID)
	if err != nil {
		return WikiPage{}, err
	}
	page := WikiPage{TenantID: p.TenantID, ID: uuid.New(), AgentID: owner, Path: path, Content: StripHostSources(content), UpdatedBy: p.ID()}
	err = s.cfg.Store.PutWiki(ctx, &page, src, HostSourcesKept)
	if errors.Is(err, ErrForgotten) {
		return WikiPage{}, fenced(MsgForgotten)
	}
	return page, err
}

// ReadWiki reads a page of p's own wiki or of the shared wiki.
func (s *Service) ReadWiki(ctx context.Context, p identity.Principal, scope WikiScope, path string) (WikiPage, error) {
	owner, err := s.wikiOwner(p, scope)
	if err != nil {
		return WikiPage{}, err
	}
	if err := checkPath(path); err != nil {
		return WikiPage{}, err
	}
	return s.cfg.Store.Wiki(ctx, p.TenantID, owner, path)
}

// ListWiki lists the pages of p's own wiki or of the shared wiki.
func (s *Service) ListWiki(ctx context.Context, p identity.Principal, scope WikiScope, n int) ([]WikiPage, error) {
	owner, err := s.wikiOwner(p, scope)
	if err != nil {
		return nil, err
	}
	return s.cfg.Store.Wikis(ctx, p.TenantID, owner, max(n, 1))
}

// DeleteShared deletes a page of the shared wiki.
func (s *Service) DeleteShared(ctx context.Context, p identity.Principal, path string) error {
	if err := checkPath(path); err != nil {
		return err
	}
	return s.cfg.Store.DeleteWiki(ctx, p.TenantID, uuid.Nil, path)
}

func (s *Service) wikiOwner(p identity.Principal, scope WikiScope) (uuid.UUID, error) {
	switch scope {
	case ScopeShared:
		return uuid.Nil, nil
	case ScopeOwn, "":
		if !p.IsEmployee() {
			return uuid.Nil, fault.New(fault.Forbidden, "only an AI employee has its own wiki; use scope shared")
		}
		return p.AgentID, nil
	}
	return uuid.Nil, fault.New(fault.Invalid, "scope must be own or shared")
}

// checkPath accepts slash-separated segments of letters (any script),
// digits, spaces inside a segment and -_.; no empty, "." or ".." segment.
func checkPath(path string) error {
	bad := fault.New(fault.Invalid, "path must be 1-%d bytes of slash-separated names (letters, digits, inner spaces, - _ .), without empty, . or .. parts", MaxWikiPath)
	if path == "" || len(path) > MaxWikiPath {
		return bad
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.TrimSpace(seg) != seg {
			return bad
		}
		for _, r := range seg {
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune(" -_.", r) {
				return bad
			}
		}
	}
	return nil
}

// hostSourcesRE matches a host_sources key in frontmatter with what
// continues it: indented lines and list items below it.
var hostSourcesRE = regexp.MustCompile(`(?m)^host_sources[ \t]*:.*(?:\n(?:[ \t]+.*|-.*))*\n?`)

// StripHostSources drops any host_sources key from the page's
// frontmatter (a leading block between "---" lines): only Visor writes it.
func StripHostSources(content string) string {
	fm, body, ok := splitFrontmatter(content)
	if !ok {
		return content
	}
	return "---\n" + hostSourcesRE.ReplaceAllString(fm, "") + "---\n" + body
}

// Render returns the page as a reader sees it: its frontmatter with the
// host_sources Visor recorded, newest first.
func (p WikiPage) Render() string {
	var hs strings.Builder
	hs.WriteString("host_sources:\n")
	for _, k := range p.HostSources {
		hs.WriteString("  - " + k + "\n")
	}
	if fm, body, ok := splitFrontmatter(p.Content); ok {
		return "---\n" + fm + hs.String() + "---\n" + body
	}
	return "---\n" + hs.String() + "---\n" + p.Content
}

// splitFrontmatter splits "---\n<fm>---\n<body>"; fm ends with a newline
// (or is empty).
func splitFrontmatter(content string) (fm, body string, ok bool) {
	rest, found := strings.CutPrefix(content, "---\n")
	if !found {
		return "", content, false
	}
	if strings.HasPrefix(rest, "---\n") {
		return "", rest[4:], true
	}
	i := strings.Index(rest, "\n---\n")
	if i < 0 {
		if strings.HasSuffix(rest, "\n---") {
			return rest[:len(rest)-3], "", true
		}
		return "", content, false
	}
	return rest[:i+1], rest[i+5:], true
}
