package workspace

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/visorhq/visor/services/fault"
)

// SkillScheme prefixes a read_file path inside an installed Skill.
const SkillScheme = "skill://"

// Skill limits.
const (
	MaxSkillFiles     = 500
	MaxSkillDescBytes = 1024
)

var (
	skillNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	envNameRE   = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,63}$`)
)

// SkillCheck is what validating a Skill folder found. Valid is false with
// Issues when it may not be installed; that is an answer, not a failure.
type SkillCheck struct {
	Valid       bool     `json:"valid"`
	Issues      []string `json:"issues"`
	Name        string   `json:"name,omitempty"`
	Description string   `json:"description,omitempty"`
	Files       int      `json:"files"`
	Size        int64    `json:"size"`
}

// CheckSkill reads a Skill folder packed as tar.gz: it needs SKILL.md at
// its root with front matter naming it (name: lower-case letters, digits
// and '-') and describing it, at most MaxSkillFiles regular files and
// folders, no links, and at most MaxSkillBytes packed.
func CheckSkill(packed []byte) SkillCheck {
	c := SkillCheck{Issues: []string{}, Size: int64(len(packed))}
	if len(packed) > MaxSkillBytes {
		c.Issues = append(c.Issues, "the folder packs to more than 2 MiB")
		return c
	}
	var skillMD []byte
	err := walkTar(packed, func(h *tar.Header, r io.Reader) error {
		switch h.Typeflag {
		case tar.TypeReg:
			c.Files++
			if strings.TrimSuffix(h.Name, "/") == "SKILL.md" {
				skillMD, _ = io.ReadAll(io.LimitReader(r, 256<<10))
			}
		case tar.TypeDir:
		default:
			c.Issues = append(c.Issues, "links and special files are not allowed: "+clip(h.Name))
		}
		return nil
	})
	if err != nil {
		c.Issues = append(c.Issues, "the folder could not be read: "+err.Error())
	}
	if c.Files > MaxSkillFiles {
		c.Issues = append(c.Issues, "more than 500 files")
	}
	if skillMD == nil {
		c.Issues = append(c.Issues, "no SKILL.md at the folder's root")
	} else {
		c.Name, c.Description = frontMatter(string(skillMD))
		switch {
		case !utf8.Valid(skillMD):
			c.Issues = append(c.Issues, "SKILL.md is not UTF-8 text")
		case !skillNameRE.MatchString(c.Name):
			c.Issues = append(c.Issues, "SKILL.md front matter needs name: lower-case letters, digits and '-', at most 64")
		}
		if c.Description == "" || len(c.Description) > MaxSkillDescBytes {
			c.Issues = append(c.Issues, "SKILL.md front matter needs description: one line of at most 1 KiB")
		}
	}
	c.Valid = len(c.Issues) == 0
	return c
}

// frontMatter reads name and description from a leading "---" block.
func frontMatter(md string) (name, desc string) {
	md = strings.TrimPrefix(md, "\ufeff")
	if !strings.HasPrefix(md, "---\n") && !strings.HasPrefix(md, "---\r\n") {
		return "", ""
	}
	for _, l := range strings.Split(md, "\n")[1:] {
		l = strings.TrimRight(l, "\r")
		if l == "---" {
			break
		}
		k, v, ok := strings.Cut(l, ":")
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		switch {
		case !ok:
		case strings.TrimSpace(k) == "name":
			name = v
		case strings.TrimSpace(k) == "description":
			desc = v
		}
	}
	return name, desc
}

// walkTar calls fn for each entry of a tar.gz.
func walkTar(packed []byte, fn func(*tar.Header, io.Reader) error) error {
	gz, err := gzip.NewReader(bytes.NewReader(packed))
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(h, tr); err != nil {
			return err
		}
	}
}

// SkillFile returns one file of a packed Skill.
func SkillFile(packed []byte, name string) (string, error) {
	var out []byte
	found := false
	err := walkTar(packed, func(h *tar.Header, r io.Reader) error {
		if h.Typeflag == tar.TypeReg && path.Clean(h.Name) == name {
			found = true
			b, err := io.ReadAll(io.LimitReader(r, MaxReadBytes+1))
			out = b
			return err
		}
		return nil
	})
	switch {
	case err != nil:
		return "", err
	case !found:
		return "", fault.New(fault.NotFound, "the Skill has no file %s", name)
	case !utf8.Valid(out) || bytes.IndexByte(out, 0) >= 0:
		return "", fault.New(fault.Invalid, "%s is not UTF-8 text", name)
	}
	return string(out), nil
}

// ParseSkillPath splits skill://<name>/<path> (the path defaults to
// SKILL.md).
func ParseSkillPath(p string) (name, file string, err error) {
	rest := strings.TrimPrefix(p, SkillScheme)
	name, file, _ = strings.Cut(rest, "/")
	if !skillNameRE.MatchString(name) {
		return "", "", fault.New(fault.Invalid, "want skill://<name>/<path>, with a Skill's name")
	}
	if file == "" {
		file = "SKILL.md"
	}
	if file, err = CleanPath(file); err != nil {
		return "", "", err
	}
	return name, file, nil
}
