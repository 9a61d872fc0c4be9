package workspace

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

type publishArgs struct {
	Path       string `json:"path"`
	Name       string `json:"name"`
	TTLSeconds int64  `json:"ttl_seconds"`
}

func (s *Service) publishTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	var a publishArgs
	if err := decode(c, &a); err != nil {
		return nil, err
	}
	if len(a.Name) > 255 || strings.ContainsAny(a.Name, "/\\\x00") {
		return nil, fault.New(fault.Invalid, "name must be a file name of at most 255 bytes")
	}
	ttl := time.Duration(a.TTLSeconds) * time.Second
	if ttl == 0 {
		ttl = LinkTTL
	}
	if ttl < time.Minute || ttl > MaxLinkTTL {
		return nil, fault.New(fault.Invalid, "ttl_seconds must be 60-%d", int(MaxLinkTTL.Seconds()))
	}
	ans, err := s.run(ctx, c.Subject, Op{Pack: &PackArgs{Path: a.Path, Name: a.Name}})
	if err != nil {
		return nil, err
	}
	art := ans.Pack.Artifact
	out := map[string]any{"artifact_id": art.ID, "name": art.Name, "sha256": art.SHA256, "size": art.Size, "media_type": art.MediaType}
	text := fmt.Sprintf("published %s: artifact %s, %d bytes, sha256 %s", art.Name, art.ID, art.Size, art.SHA256)
	if link, exp, err := s.Link(ctx, c.Principal(), art.ID, ttl); err != nil {
		return nil, err
	} else if link != "" {
		out["url"], out["url_expires_at"] = link, exp
		text += "\ndownload (until " + exp.Format(time.RFC3339) + "): " + link
	}
	return &tools.Result{Text: text, Structured: out, Note: map[string]any{"artifact_id": art.ID.String(), "size": art.Size}}, nil
}

// Link makes an expiring download URL for an artifact of p's tenant: a
// random token whose hash is stored; the URL holds the token and the
// tenant, and works until it expires. Empty when no base URL is set.
func (s *Service) Link(ctx context.Context, p identity.Principal, id uuid.UUID, ttl time.Duration) (string, time.Time, error) {
	if s.cfg.ArtifactURL == nil {
		return "", time.Time{}, nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", time.Time{}, err
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	exp := s.cfg.Now().Add(ttl).UTC().Truncate(time.Second)
	if err := s.cfg.Artifacts.AddLink(ctx, p.TenantID, id, TokenHash(token), exp); err != nil {
		return "", time.Time{}, err
	}
	return s.cfg.ArtifactURL(p.TenantSlug, token), exp, nil
}

// TokenHash is how a download token is stored.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Download returns the artifact a token opens in a tenant. Any token that
// is unknown, expired or of another tenant is NotFound.
func (s *Service) Download(ctx context.Context, tenantID uuid.UUID, token string) (Artifact, []byte, error) {
	if len(token) < 20 || len(token) > 100 {
		return Artifact{}, nil, fault.New(fault.NotFound, "artifact link not found or expired")
	}
	a, b, err := s.cfg.Artifacts.ByLink(ctx, tenantID, TokenHash(token), s.cfg.Now())
	if fault.Is(err, fault.NotFound) {
		return Artifact{}, nil, fault.New(fault.NotFound, "artifact link not found or expired")
	}
	return a, b, err
}

type imageArgs struct {
	ArtifactID   string `json:"artifact_id"`
	Path         string `json:"path"`
	URL          string `json:"url"`
	MaxDimension int    `json:"max_dimension"`
}

// URLFetcher fetches an image URL through the outbound guard, at most max
// bytes.
type URLFetcher interface {
	FetchImage(ctx context.Context, rawURL string, max int64) ([]byte, error)
}

func (s *Service) viewImageTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	var a imageArgs
	if err := decode(c, &a); err != nil {
		return nil, err
	}
	n := 0
	for _, v := range []string{a.ArtifactID, a.Path, a.URL} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return nil, fault.New(fault.Invalid, "give exactly one of artifact_id, path and url")
	}
	dim := a.MaxDimension
	if dim == 0 {
		dim = DefaultImageDimension
	}
	if dim < 64 || dim > 2048 {
		return nil, fault.New(fault.Invalid, "max_dimension must be 64-2048")
	}
	raw, from, err := s.imageBytes(ctx, c, a)
	if err != nil {
		return nil, err
	}
	img, err := FitImage(raw, dim)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"source": from, "media_type": img.MIMEType, "width": img.Width, "height": img.Height,
		"original_width": img.OrigWidth, "original_height": img.OrigHeight, "bytes": len(img.Data), "resized": img.Resized}
	return &tools.Result{Text: fmt.Sprintf("image from %s: %dx%d %s (original %dx%d)", from, img.Width, img.Height, img.MIMEType, img.OrigWidth, img.OrigHeight),
		Images: []tools.Image{{MIMEType: img.MIMEType, Data: img.Data}}, Structured: out, Note: map[string]any{"bytes": len(raw)}}, nil
}

func (s *Service) imageBytes(ctx context.Context, c tools.Call, a imageArgs) ([]byte, string, error) {
	p := c.Principal()
	switch {
	case a.ArtifactID != "":
		id, err := uuid.Parse(a.ArtifactID)
		if err != nil {
			return nil, "", fault.New(fault.NotFound, "artifact not found")
		}
		// Its size is checked before its content (up to 64 MiB) is read.
		art, _, err := s.cfg.Artifacts.Artifact(ctx, p.TenantID, id, false)
		if fault.Is(err, fault.NotFound) || (err == nil && art.AgentID != p.AgentID) {
			return nil, "", fault.New(fault.NotFound, "artifact not found")
		}
		if err != nil {
			return nil, "", err
		}
		if art.Size > MaxImageBytes {
			return nil, "", fault.New(fault.TooLarge, "the artifact holds %d bytes; images of at most %d are viewed", art.Size, MaxImageBytes)
		}
		_, b, err := s.cfg.Artifacts.Artifact(ctx, p.TenantID, id, true)
		return b, "artifact", err
	case a.Path != "":
		ans, err := s.run(ctx, c.Subject, Op{Fetch: &FetchArgs{Path: a.Path, Max: MaxImageBytes}})
		if err != nil {
			return nil, "", err
		}
		return ans.Fetch.Data, "workspace", nil
	}
	u, err := url.Parse(a.URL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, "", fault.New(fault.Invalid, "url must be an https URL")
	}
	allowed := c.Subject.Agent.Settings.Capabilities.WorkspaceConfig.AllowedHosts
	if !slices.Contains(allowed, strings.ToLower(u.Hostname())) {
		return nil, "", fault.New(fault.Forbidden, "%s is not on your workspace's allowed hosts", u.Hostname())
	}
	if s.cfg.Images == nil {
		return nil, "", fault.New(fault.Unavailable, "fetching image URLs is not configured in this deployment")
	}
	b, err := s.cfg.Images.FetchImage(ctx, u.String(), MaxImageBytes)
	return b, "url", err
}
