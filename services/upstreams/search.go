package upstreams

import (
	"context"
	"slices"
	"strings"
	"unicode"

	"github.com/google/uuid"
	"golang.org/x/text/unicode/norm"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/tools"
)

// Search bounds.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 50
	maxQueryBytes      = 500
	summaryBytes       = 200
)

// Hit is one search result: a short summary of a tool the caller may call.
type Hit struct {
	// Name is <server>:<tool>, what mcp_tool_inspect and mcp_tool_call take.
	Name    string `json:"name"`
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Title   string `json:"title,omitempty"`
	Summary string `json:"summary"`
	score   float64
}

// Search ranks the tools of the tenant's enabled servers (of server alone
// when it is not "") against query, keeping only those the policy lets
// the subject call, and returns at most limit. An empty query lists them
// by name. Words match the tool's name, title and description, case- and
// width-insensitively; a word in Japanese or Chinese also matches by its
// two-character pieces, so a query need not be split into words.
func (s *Service) Search(ctx context.Context, sub *tools.Subject, server, query string, limit int) ([]Hit, int, error) {
	if len(query) > maxQueryBytes {
		return nil, 0, fault.New(fault.Invalid, "query must be at most %d bytes", maxQueryBytes)
	}
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	if limit > MaxSearchLimit {
		return nil, 0, fault.New(fault.Invalid, "limit must be 1-%d", MaxSearchLimit)
	}
	if server != "" && !ValidName(server) {
		return nil, 0, fault.New(fault.Invalid, "server %q is not a server name", server)
	}
	all, err := s.cfg.Store.Catalog(ctx, sub.Principal.TenantID, server)
	if err != nil {
		return nil, 0, err
	}
	servers, err := s.cfg.Store.List(ctx, sub.Principal.TenantID)
	if err != nil {
		return nil, 0, err
	}
	off, err := s.offList(ctx, sub.Principal.TenantID, servers)
	if err != nil {
		return nil, 0, err
	}
	terms := queryTerms(query)
	hits := make([]Hit, 0, min(len(all), 64))
	for _, t := range all {
		if off[t.Server] || !tools.DecideUpstream(sub, FullName(t.Server, t.Name)).Allowed {
			continue
		}
		sc := 1.0
		if len(terms) > 0 {
			if sc = score(terms, t); sc == 0 {
				continue
			}
		}
		hits = append(hits, Hit{Name: t.Server + ":" + t.Name, Server: t.Server, Tool: t.Name, Title: t.Title, score: sc})
	}
	slices.SortStableFunc(hits, func(a, b Hit) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	total := len(hits)
	hits = hits[:min(limit, len(hits))]
	byName := make(map[string]string, len(hits))
	for _, t := range all {
		byName[t.Server+":"+t.Name] = t.Description
	}
	for i := range hits {
		hits[i].Summary = summary(byName[hits[i].Name])
	}
	return hits, total, nil
}

// fold is the form text is compared in: NFKC (full-width letters become
// ASCII), lower case.
func fold(s string) string { return strings.ToLower(norm.NFKC.String(s)) }

func queryTerms(q string) []string {
	return strings.FieldsFunc(fold(q), func(r rune) bool {
		return unicode.IsSpace(r) || (unicode.IsPunct(r) && r != '_' && r != '-' && r != '.') || r == '、' || r == '。'
	})
}

// score sums each term's best match: in the name 3, the title 2, the
// description 1; a CJK term not found whole scores by the share of its
// two-character pieces the text holds.
func score(terms []string, t Tool) float64 {
	name, title, desc := fold(t.Name), fold(t.Title), fold(t.Description)
	total := 0.0
	for _, term := range terms {
		switch {
		case strings.Contains(name, term):
			total += 3
		case strings.Contains(title, term):
			total += 2
		case strings.Contains(desc, term):
			total++
		case cjk(term):
			total += pieces(term, name+" "+title+" "+desc)
		}
	}
	return total
}

func cjk(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
	})
}

// pieces is the share of term's two-character pieces that text holds,
// when at least half are held; 0 otherwise.
func pieces(term, text string) float64 {
	rs := []rune(term)
	if len(rs) < 2 {
		return 0
	}
	found := 0
	for i := 0; i+1 < len(rs); i++ {
		if strings.Contains(text, string(rs[i:i+2])) {
			found++
		}
	}
	share := float64(found) / float64(len(rs)-1)
	if share < 0.5 {
		return 0
	}
	return share
}

// summary is the first sentence or line of a description, at most
// summaryBytes.
func summary(desc string) string {
	desc = strings.TrimSpace(desc)
	if i := strings.IndexByte(desc, '\n'); i >= 0 {
		desc = strings.TrimSpace(desc[:i])
	}
	if len(desc) <= summaryBytes {
		return desc
	}
	return cut(desc, summaryBytes-3) + "..."
}

// Callable is one enabled upstream server and how many of its tools a
// subject may call.
type Callable struct {
	Name        string
	Description string
	Tools       int
}

// CallableServers lists the tenant's servers of which the policy lets sub
// call at least one tool, by name, with the count of those tools: what
// the context tool tells an employee it can reach through mcp_tool_*.
func (s *Service) CallableServers(ctx context.Context, sub *tools.Subject) ([]Callable, error) {
	servers, err := s.cfg.Store.List(ctx, sub.Principal.TenantID)
	if err != nil {
		return nil, err
	}
	all, err := s.cfg.Store.Catalog(ctx, sub.Principal.TenantID, "")
	if err != nil {
		return nil, err
	}
	off, err := s.offList(ctx, sub.Principal.TenantID, servers)
	if err != nil {
		return nil, err
	}
	count := map[string]int{}
	for _, t := range all {
		if tools.DecideUpstream(sub, FullName(t.Server, t.Name)).Allowed {
			count[t.Server]++
		}
	}
	out := []Callable{}
	for _, srv := range servers {
		if srv.Enabled && !off[srv.Name] && count[srv.Name] > 0 {
			out = append(out, Callable{Name: srv.Name, Description: srv.Description, Tools: count[srv.Name]})
		}
	}
	slices.SortFunc(out, func(a, b Callable) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// offList names the stdio servers among servers whose image the tenant has
// taken off its allow list of stdio images: their tools are neither found
// nor callable (what a caller finds is what it may call).
func (s *Service) offList(ctx context.Context, tenantID uuid.UUID, servers []Server) (map[string]bool, error) {
	var off map[string]bool
	var images []string
	loaded := false
	for _, srv := range servers {
		if srv.Transport != Stdio {
			continue
		}
		if !loaded && s.cfg.StdioImages != nil {
			var err error
			if images, err = s.cfg.StdioImages(ctx, tenantID); err != nil {
				return nil, err
			}
		}
		loaded = true
		if !slices.Contains(images, srv.Image) {
			if off == nil {
				off = map[string]bool{}
			}
			off[srv.Name] = true
		}
	}
	return off, nil
}
