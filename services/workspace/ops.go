package workspace

import (
	"context"

	"github.com/google/uuid"
)

// Ref names a workspace for the worker that runs it, with what the
// container needs to know: the quota and the hosts the network allows.
type Ref struct {
	Tenant       uuid.UUID `json:"tenant"`
	Agent        uuid.UUID `json:"agent"`
	ID           uuid.UUID `json:"id"`
	Quota        int64     `json:"quota"`
	AllowedHosts []string  `json:"allowed_hosts,omitempty"`
}

// Op is one call on a workspace's worker: exactly one of its fields is set.
type Op struct {
	Read    *ReadArgs    `json:"read,omitempty"`
	List    *ListArgs    `json:"list,omitempty"`
	Search  *SearchArgs  `json:"search,omitempty"`
	Edit    *EditArgs    `json:"edit,omitempty"`
	Exec    *ExecArgs    `json:"exec,omitempty"`
	Observe *ObserveArgs `json:"observe,omitempty"`
	Act     *ActArgs     `json:"act,omitempty"`
	// Fetch reads a file's bytes (an image to view, a Skill to install);
	// Pack packs a file or folder for publishing.
	Fetch *FetchArgs `json:"fetch,omitempty"`
	Pack  *PackArgs  `json:"pack,omitempty"`
	// Status reports the container and sessions; Stop ends the
	// container after saving the tree; Reset ends it without saving.
	Status bool `json:"status,omitempty"`
	Stop   bool `json:"stop,omitempty"`
	Reset  bool `json:"reset,omitempty"`
}

// Answer is what a worker answers for an Op.
type Answer struct {
	Read     *ReadResult   `json:"read,omitempty"`
	List     *ListResult   `json:"list,omitempty"`
	Search   *SearchResult `json:"search,omitempty"`
	Edit     *EditResult   `json:"edit,omitempty"`
	Session  *SessionView  `json:"session,omitempty"`
	Sessions []SessionView `json:"sessions,omitempty"`
	Act      *ActResult    `json:"act,omitempty"`
	Fetch    *FetchResult  `json:"fetch,omitempty"`
	Pack     *PackResult   `json:"pack,omitempty"`
	Status   *HostStatus   `json:"status,omitempty"`
	Usage    *Usage        `json:"usage,omitempty"`
}

// FetchArgs reads one file's bytes, at most Max; with Folder, a folder
// packed as tar.gz instead.
type FetchArgs struct {
	Path   string `json:"path"`
	Max    int64  `json:"max"`
	Folder bool   `json:"folder,omitempty"`
}

// FetchResult is a file's bytes. Dir is set (and Data empty) for a folder,
// packed as tar.gz when Pack asked.
type FetchResult struct {
	Path string `json:"path"`
	Data []byte `json:"data"`
}

// PackArgs packs a file, or a folder as tar.gz, and stores it as an
// artifact of the employee (the worker writes it to Postgres itself: an
// artifact may be larger than a plane answer).
type PackArgs struct {
	Path string `json:"path"`
	Name string `json:"name,omitempty"`
}

// PackResult is the artifact a Pack stored.
type PackResult struct {
	Artifact Artifact `json:"artifact"`
}

// HostStatus is what the worker holds for a workspace.
type HostStatus struct {
	Worker    string `json:"worker"`
	Container string `json:"container"`
	Running   int    `json:"sessions_running"`
	Dirty     bool   `json:"unsaved_changes"`
}

// Usage is the tree's size after an op that may have changed it.
type Usage struct {
	Bytes int64 `json:"bytes_used"`
	Files int   `json:"files_used"`
	Quota int64 `json:"quota"`
}

// Host runs workspaces on a worker: docker/workspace implements it. Do
// runs op on the workspace this worker holds; with open set it first
// takes the workspace (lease, restore, container) when it does not hold
// it. Errors: ErrNotHeld when the worker does not hold the workspace and
// open is false; a HeldError when another worker holds it.
type Host interface {
	Do(ctx context.Context, ref Ref, op Op, open bool) (Answer, error)
}
