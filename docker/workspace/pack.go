package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	domain "github.com/visorhq/visor/services/workspace"
)

// pack publishes a file, or a folder as tar.gz, as an immutable artifact.
func (h *held) pack(ctx context.Context, m *Manager, a domain.PackArgs) (domain.Answer, error) {
	rel, err := domain.CleanPath(a.Path)
	if err != nil {
		return domain.Answer{}, err
	}
	st, err := h.tree.Root.Stat(rel)
	if err != nil {
		return domain.Answer{}, domain.FileError(rel, err)
	}
	name := a.Name
	if name == "" {
		name = path.Base(rel)
		if rel == "." {
			name = "workspace"
		}
	}
	var buf bytes.Buffer
	media := mime.TypeByExtension(path.Ext(name))
	if st.IsDir() {
		sub, err := h.tree.Root.OpenRoot(rel)
		if err != nil {
			return domain.Answer{}, domain.FileError(rel, err)
		}
		_, _, err = domain.Pack(sub, &limited{w: &buf, n: domain.MaxArtifactBytes})
		sub.Close()
		if err != nil {
			return domain.Answer{}, tooLarge(err)
		}
		if path.Ext(name) != ".gz" {
			name += ".tar.gz"
		}
		media = "application/gzip"
	} else {
		if st.Size() > domain.MaxArtifactBytes {
			return domain.Answer{}, fault.New(fault.TooLarge, "%s holds %d bytes; an artifact holds at most %d", rel, st.Size(), domain.MaxArtifactBytes)
		}
		f, err := h.tree.Root.Open(rel)
		if err != nil {
			return domain.Answer{}, domain.FileError(rel, err)
		}
		_, err = io.Copy(&buf, io.LimitReader(f, domain.MaxArtifactBytes))
		f.Close()
		if err != nil {
			return domain.Answer{}, err
		}
	}
	if media == "" {
		media = "application/octet-stream"
	}
	sum := sha256.Sum256(buf.Bytes())
	art := domain.Artifact{TenantID: h.ref.Tenant, AgentID: h.ref.Agent, ID: uuid.New(), Name: name, MediaType: media,
		SHA256: hex.EncodeToString(sum[:]), Size: int64(buf.Len()), CreatedAt: time.Now().UTC()}
	if err := m.stores.Artifacts.PutArtifact(ctx, art, buf.Bytes()); err != nil {
		return domain.Answer{}, err
	}
	return domain.Answer{Pack: &domain.PackResult{Artifact: art}}, nil
}

// limited fails a write past n bytes.
type limited struct {
	w io.Writer
	n int64
}

var errTooLarge = fault.New(fault.TooLarge, "the folder packs to more than an artifact may hold (64 MiB)")

func (l *limited) Write(p []byte) (int, error) {
	if l.n -= int64(len(p)); l.n < 0 {
		return 0, errTooLarge
	}
	return l.w.Write(p)
}

func tooLarge(err error) error {
	if fault.Is(err, fault.TooLarge) {
		return errTooLarge
	}
	return err
}

// skillDir unpacks an installed Skill under the container's /skills
// (read-only there) and returns its path in the container.
func (m *Manager) skillDir(ctx context.Context, h *held, name string, version int) (string, error) {
	if m.stores.Skills == nil {
		return "", fault.New(fault.Unavailable, "Skills are not available on this worker")
	}
	dir := filepath.Join(h.dir, "skills", name)
	marker := filepath.Join(h.dir, "skills", "."+name+".version")
	if b, err := os.ReadFile(marker); err == nil && string(b) == itoa(version) {
		return "/skills/" + name, nil
	}
	archive, err := m.stores.Skills.SkillArchive(ctx, h.ref.Tenant, h.ref.Agent, name, version)
	if err != nil {
		return "", err
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := domain.Unpack(bytes.NewReader(archive), root, domain.MaxSkillBytes*4, -1, -1); err != nil {
		return "", err
	}
	if err := os.WriteFile(marker, []byte(itoa(version)), 0o644); err != nil {
		return "", err
	}
	return "/skills/" + name, nil
}

func itoa(n int) string { return formatInt(int64(n)) }
