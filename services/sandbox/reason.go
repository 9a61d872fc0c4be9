package sandbox

import (
	"regexp"
	"slices"
)

// UnavailableCodes lists why a run could not start: the codes Unavailable
// is called with, and "other" for any detail that names none of them.
var UnavailableCodes = []string{"image_not_allowed", "image_missing", "no_worker", "worker_lost", "worker_unreachable",
	"docker_unreachable", "docker_error", "runtime_missing", "workspace", "create_failed", "host_failed", "other"}

var unavailableCode = regexp.MustCompile(`^Script sandbox unavailable \(([a-z_]+)\)`)

// Reason is the code of why an unavailable run did not run (one of
// UnavailableCodes), read from its logged detail; "" for any other run.
// The dashboard translates it and shows the English detail beside it.
func (r Run) Reason() string {
	if r.State != RunUnavailable {
		return ""
	}
	if m := unavailableCode.FindStringSubmatch(r.Detail); m != nil && slices.Contains(UnavailableCodes, m[1]) {
		return m[1]
	}
	switch r.Detail {
	case "the script's directory could not be prepared", "the script could not be written":
		return "workspace"
	case "the script could not be started on the host":
		return "host_failed"
	}
	return "other"
}
