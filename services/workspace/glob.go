package workspace

import (
	"path"
	"strings"

	"github.com/visorhq/visor/services/fault"
)

// Glob is a path pattern relative to a listing's root: "*" matches within
// one segment, "**" matches any number of whole segments.
type Glob []string

// ParseGlob checks p and splits it into segments.
func ParseGlob(p string) (Glob, error) {
	if p == "" || len(p) > 512 || strings.HasPrefix(p, "/") {
		return nil, fault.New(fault.Invalid, "pattern %q must be a relative glob of at most 512 bytes", p)
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if s == ".." {
			return nil, fault.New(fault.Invalid, "pattern %q may not hold '..'", p)
		}
		if s != "**" {
			if _, err := path.Match(s, ""); err != nil {
				return nil, fault.New(fault.Invalid, "pattern %q is malformed", p)
			}
		}
	}
	return segs, nil
}

// Match reports whether rel (slash-separated, relative) matches g.
func (g Glob) Match(rel string) bool { return matchSegs(g, strings.Split(rel, "/")) }

func matchSegs(g []string, segs []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if matchSegs(g[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(g[0], segs[0]); !ok {
			return false
		}
		g, segs = g[1:], segs[1:]
	}
	return len(segs) == 0
}

// anyMatch reports whether rel matches one of gs (false for none).
func anyMatch(gs []Glob, rel string) bool {
	for _, g := range gs {
		if g.Match(rel) {
			return true
		}
	}
	return false
}

// parseGlobs parses each pattern of ps, at most 32.
func parseGlobs(ps []string) ([]Glob, error) {
	if len(ps) > 32 {
		return nil, fault.New(fault.Invalid, "at most 32 patterns")
	}
	out := make([]Glob, 0, len(ps))
	for _, p := range ps {
		g, err := ParseGlob(p)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}
