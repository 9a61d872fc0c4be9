package mcp

import (
	"container/list"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/visorhq/visor/services/tools"
)

// The tools/list cache has two levels, both bounded (least recently used
// out first):
//
//   - decisions: a caller's visible set, keyed by everything the policy
//     reads — the principal (without its credential id), the tenant's
//     policy version, the agent row's settings version, status and update
//     time, and the live grants. Every committed change that can alter a
//     decision bumps the tenant's policy version, and the Subject carries
//     the version read before its rows, so a change gives the next
//     request a key no earlier request used: nothing stale can be served.
//     The policy runs once per key, not per request.
//   - pages: the encoded answer for one page of one visible set, keyed by
//     tenant, era, the set's membership and the page cursor. Every caller
//     with the same set in the same tenant is served the same bytes;
//     another tenant never is.
//
// A subject whose directory reports no version (PolicyVersion -1) is
// decided afresh every time; its page bytes are still shared.
type listCache struct {
	off       bool                 // ListCacheEntries < 0: decide and encode every time (for comparison)
	decisions *lru[string, string] // decision key -> set membership
	pages     *lru[pageKey, *listPage]
}

// DefaultListCacheEntries bounds each level of the cache.
const DefaultListCacheEntries = 10000

// DefaultListCacheBytes bounds the encoded bytes of the cached pages. An
// entry count alone does not bound memory: a page grows with the catalog
// (about 35 KB for 100 tools, 300 KB for 1,000), and a tenant whose
// employees' settings differ can need a page per employee.
const DefaultListCacheBytes = 128 << 20

type pageKey struct {
	tenant uuid.UUID
	era    string
	set    string // one byte per registry tool: '1' visible, '0' not
	after  string // the cursor's position, "" for the first page
}

// listPage is a tools/list result whose JSON is encoded once. It is shared
// by every caller it is served to and never modified after it is built.
type listPage struct {
	*sdk.ListToolsResult
	raw json.RawMessage
}

// MarshalJSON returns the bytes encoded when the page was built.
func (p *listPage) MarshalJSON() ([]byte, error) { return p.raw, nil }

func newListCache(entries, bytes int) *listCache {
	if entries < 0 {
		return &listCache{off: true}
	}
	if entries == 0 {
		entries = DefaultListCacheEntries
	}
	if bytes <= 0 {
		bytes = DefaultListCacheBytes
	}
	pages := newLRU[pageKey, *listPage](entries)
	pages.maxWeight, pages.weigh = bytes, func(pg *listPage) int { return cap(pg.raw) }
	return &listCache{decisions: newLRU[string, string](entries), pages: pages}
}

// decisionKey names what the policy reads for sub, or "" when sub carries
// no policy version (then the set is not cached).
func decisionKey(sub *tools.Subject) string {
	if sub.PolicyVersion < 0 {
		return ""
	}
	p := sub.Principal
	var b strings.Builder
	b.Grow(256)
	for _, s := range []string{p.TenantID.String(), strconv.FormatInt(sub.PolicyVersion, 10), string(p.Kind),
		p.AgentID.String(), p.MemberID.String(), p.ClientID, p.TaskID.String(), string(p.Role), p.CreatorID.String()} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	b.WriteString(strings.Join(p.Scopes, " "))
	b.WriteByte(0)
	if a := sub.Agent; a != nil {
		b.WriteString(strconv.FormatInt(int64(a.SettingsVersion), 10))
		b.WriteByte(0)
		b.WriteString(string(a.Status))
		b.WriteByte(0)
		b.WriteString(a.UpdatedAt.UTC().Format("2006-01-02T15:04:05.999999999"))
		b.WriteByte(0)
	}
	b.WriteString(strings.Join(sub.Grants, "\x01"))
	return b.String()
}

// visibleSet returns sub's visible set as one byte per registry tool, from
// the cache when the policy has already decided it for this key.
func (h *Handler) visibleSet(sub *tools.Subject) string {
	key := decisionKey(sub)
	if h.lists.off {
		key = ""
	}
	if key != "" {
		if set, ok := h.lists.decisions.get(key); ok {
			return set
		}
	}
	all := h.reg.All()
	b := make([]byte, len(all))
	for i, t := range all {
		b[i] = '0'
		if h.reg.Decide(sub, t, nil).Visible() {
			b[i] = '1'
		}
	}
	set := string(b)
	if key != "" {
		h.lists.decisions.put(key, set)
	}
	return set
}

// page returns the page of set that follows the tool named after, built
// and encoded on first use.
func (h *Handler) page(k pageKey) (*listPage, error) {
	if !h.lists.off {
		if pg, ok := h.lists.pages.get(k); ok {
			return pg, nil
		}
	}
	all := h.reg.All()
	i := sortSearch(all, k.after)
	res := &sdk.ListToolsResult{Tools: make([]*sdk.Tool, 0, min(len(all)-i, h.opts.PageSize))}
	for ; i < len(all) && len(res.Tools) < h.opts.PageSize; i++ {
		if k.set[i] == '1' {
			res.Tools = append(res.Tools, h.listTools[i])
		}
	}
	if len(res.Tools) == h.opts.PageSize && i < len(all) {
		res.NextCursor = encodeCursor(all[i-1].Name)
	}
	res.CacheScope, res.TTLMs = "private", int(h.opts.ListTTL.Milliseconds())
	if IsStateless(k.era) {
		// What the SDK adds to every result of this era, encoded with the
		// page (it finds the server info present and leaves it).
		res.ResultType = "complete"
		res.Meta = sdk.Meta{sdk.MetaKeyServerInfo: h.impl}
	}
	if h.lists.off {
		return &listPage{ListToolsResult: res}, nil
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	pg := &listPage{ListToolsResult: res, raw: raw}
	h.lists.pages.put(k, pg)
	return pg, nil
}

// lru is a size-bounded map that drops its least recently used entry. With
// weigh set it also keeps the entries' total weight within maxWeight
// (always keeping the newest entry).
type lru[K comparable, V any] struct {
	mu        sync.Mutex
	max       int
	order     *list.List // front = most recent; elements hold *lruEntry
	m         map[K]*list.Element
	weigh     func(V) int
	maxWeight int
	weight    int
}

type lruEntry[K comparable, V any] struct {
	k K
	v V
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, order: list.New(), m: make(map[K]*list.Element)}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry[K, V]).v, true
}

func (c *lru[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[k]; ok {
		c.weight -= c.weightOf(e.Value.(*lruEntry[K, V]).v)
		e.Value.(*lruEntry[K, V]).v = v
		c.order.MoveToFront(e)
	} else {
		c.m[k] = c.order.PushFront(&lruEntry[K, V]{k: k, v: v})
	}
	c.weight += c.weightOf(v)
	for c.order.Len() > c.max || (c.weight > c.maxWeight && c.order.Len() > 1 && c.weigh != nil) {
		last := c.order.Back()
		c.order.Remove(last)
		ent := last.Value.(*lruEntry[K, V])
		delete(c.m, ent.k)
		c.weight -= c.weightOf(ent.v)
	}
}

func (c *lru[K, V]) weightOf(v V) int {
	if c.weigh == nil {
		return 0
	}
	return c.weigh(v)
}

// size is the entries' total weight.
func (c *lru[K, V]) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.weight
}

func (c *lru[K, V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
