package computer

import (
	"context"

	"github.com/google/uuid"
)

// TreePath is where a browser session sees its employee's file-tool
// workspace (the folder the workspace container has at /workspace):
// read-only, live, when the session started in the process that holds
// the workspace. A file written with file_edit or exec_command, before or
// after the start, is there.
const TreePath = "/workspace/tree"

// TreeMount names the employee's file-tool workspace for a session start:
// its id, and Worker, the computer worker in the process that holds it
// (where the start must land for the browser to mount it).
type TreeMount struct {
	ID     uuid.UUID
	Worker string
}

// Trees opens an employee's file-tool workspace for a browser session and
// says where it is held; the workspace family implements it.
type Trees interface {
	OpenTree(ctx context.Context, tenant, agent uuid.UUID, allowedHosts []string) (TreeMount, error)
}

// TreePinner lends a worker's live workspace tree to a session that
// starts in the same process (docker/workspace's Manager is one): the
// host folder of the tree, and a release for when the session ends. Only
// the named tenant's and employee's workspace is lent.
type TreePinner interface {
	Pin(ctx context.Context, tenant, agent, id uuid.UUID) (dir string, release func(), err error)
}

// TreeError is a start that could not mount the employee's workspace
// where it was placed; the service starts the session without it and
// says why.
type TreeError struct{ Reason string }

func (e *TreeError) Error() string { return e.Reason }

// SetTrees lets sessions mount the employee's file-tool workspace.
func (s *Service) SetTrees(t Trees) { s.trees = t }

// Notes of a start without the workspace mounted.
const (
	noteNoTrees               = "your workspace files are not mounted in this browser: this deployment runs no workspace workers"
	noteOpenFailed            = "your workspace files are not mounted in this browser: the workspace could not be opened"
	noteNoComputer            = "your workspace files are not mounted in this browser: the worker holding your workspace runs no browser sessions (run VISOR_COMPUTER_WORKER and VISOR_WORKSPACE_WORKER in one visor worker process to mount it)"
	noteTreeWorkerUnavailable = "your workspace files are not mounted in this browser: the worker holding your workspace could not start a browser"
	noteNotHeldHere           = "your workspace files are not mounted in this browser: the workspace moved between workers while the session started; stop the session and start it again to mount it"
)

// placeTree fills spec.Tree with the employee's file-tool workspace, or
// returns the note saying why it will not be mounted ("" when the
// employee has no workspace tools).
func (s *Service) placeTree(ctx context.Context, c caller, spec *Spec) string {
	if !c.settings.Capabilities.Workspace {
		return ""
	}
	if s.trees == nil {
		return noteNoTrees
	}
	tm, err := s.trees.OpenTree(ctx, c.tenant, c.agent, c.settings.Capabilities.WorkspaceConfig.AllowedHosts)
	if err != nil {
		s.log.Warn("open the workspace for a browser session", "agent", c.agent, "err", err)
		return noteOpenFailed + ": " + err.Error()
	}
	spec.Tree = &tm
	return ""
}
