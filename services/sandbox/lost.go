package sandbox

import (
	"errors"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/plane"
)

// lost is the error of a run whose sandbox worker stopped answering after
// taking it (code worker_lost). Unlike Unavailable it never says the
// script was not run: a worker that had taken it may have started it, and
// one that had reported progress was running it, so the caller is told to
// check the script's effects before running it again.
func lost(cause error) error {
	var le *plane.LostError
	state := "The worker had taken the script and may have started it"
	if errors.As(cause, &le) && le.Started {
		state = "The script had started and may have run in part or to the end"
	}
	return fault.Newf(fault.Unavailable, cause,
		"Script sandbox unavailable (worker_lost): the sandbox worker running the script stopped answering; its container is removed when it or another worker starts. %s: check its effects before running it again", state)
}
