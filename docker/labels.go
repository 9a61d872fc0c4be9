// Package docker is what Visor's kinds of container share on the Docker
// Engine: script sandbox runs (docker/sandbox), computer-use browser
// sessions (docker/browser), workspaces (docker/workspace) and stdio MCP
// servers (docker/mcpstdio). It owns the one label scheme every container
// and network Visor creates carries, the one sweep that removes a kind's
// leftovers by those labels, and the one janitor that runs a kind's
// housekeeping on the shared lifecycle. Nothing here knows a domain rule;
// the subpackages map their domain onto it.
package docker

import (
	"github.com/docker/docker/api/types/filters"
)

// Kind names what a container is for; it is the value of LabelKind.
type Kind string

// The kinds of container Visor creates.
const (
	Sandbox Kind = "sandbox"  // a script sandbox run
	Browser Kind = "computer" // a computer-use browser session and its network
	// Workspace is an employee's workspace container and its network.
	Workspace Kind = "workspace"
	// MCPStdio is a tenant's stdio MCP server's container and its network.
	MCPStdio Kind = "mcpstdio"
)

// The labels on every container and network Visor creates. A sweep finds
// a kind's leftovers by LabelKind (and LabelWorker), never by name.
const (
	LabelKind   = "org.visor.kind"   // a Kind
	LabelWorker = "org.visor.worker" // the worker id that created it
	LabelTenant = "org.visor.tenant" // the tenant's id
	LabelID     = "org.visor.id"     // the run's or session's id
)

// Labels returns the labels of one container or network of kind, made by
// worker for tenant's run or session id.
func Labels(kind Kind, worker, tenant, id string) map[string]string {
	return map[string]string{LabelKind: string(kind), LabelWorker: worker, LabelTenant: tenant, LabelID: id}
}

// Filter selects kind's containers or networks, only worker's when worker
// is not empty.
func Filter(kind Kind, worker string) filters.Args {
	args := filters.NewArgs(filters.Arg("label", LabelKind+"="+string(kind)))
	if worker != "" {
		args.Add("label", LabelWorker+"="+worker)
	}
	return args
}
