package workspace

import (
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// Family is the tools' family name.
const Family = "workspace"

func str(name, desc string, req bool) tools.Param {
	return tools.Param{Name: name, Type: "string", Description: desc, Required: req}
}

func num(name, desc string) tools.Param {
	return tools.Param{Name: name, Type: "integer", Description: desc}
}

func flag(name, desc string) tools.Param {
	return tools.Param{Name: name, Type: "boolean", Description: desc}
}

func list(name, desc string) tools.Param {
	return tools.Param{Name: name, Type: "array", Description: desc}
}

// hashed is a path parameter: the audit row keeps its keyed hash only.
func hashed(p tools.Param) tools.Param { p.Secret, p.Audit = true, tools.AuditHash; return p }

// counted is a content parameter: the audit row keeps its length only.
func counted(p tools.Param) tools.Param { p.Secret, p.Audit = true, tools.AuditChars; return p }

// Register declares the workspace tools: every one acts for the calling
// AI employee, and all but task_manage are listed only with
// [capabilities] workspace.
func (s *Service) Register(reg *tools.Registry) {
	ro := tools.Annotations{ReadOnly: true, Idempotent: true}
	rw := tools.Annotations{}
	declare := func(name, title, desc string, scope string, gate tools.Gate, a tools.Annotations, params []tools.Param, h tools.Handler) {
		a.Title = title
		t := tools.Tool{Name: name, Description: desc, Params: params, Scope: scope, Family: Family, Gate: gate,
			ProcessAgent: true, Annotations: a, Handler: h}
		if name == "skill_package" { // changing Skills is what can_modify_own_skills governs
			t.Permission, t.PermissionIf = tools.PermModifyOwnSkills, SkillWrites
		}
		reg.Register(t)
	}
	path := hashed(str("path", "Path relative to /workspace (or under it); never '..'. skill://<name>/<path> reads a Skill's file.", true))
	r, w := identity.ScopeToolsRead, identity.ScopeToolsWrite
	gw := tools.GateWorkspace
	declare("read_file", "Read a file", "Read a UTF-8 text file of your workspace (or skill://<name>/<path>) in line slices.", r, gw, ro,
		[]tools.Param{path, num("start_line", "First line, from 1 (default 1)."), num("end_line", "Last line (default: 2,000 lines on).")}, s.readTool)
	declare("list_dir", "List or find files", "List a folder of your workspace as a bounded tree, or find files by glob (* within a segment, ** across).", r, gw, ro,
		[]tools.Param{hashed(str("path", "Folder relative to /workspace (default the root).", false)), num("max_depth", "Levels to descend, 1-32 (default 3)."),
			num("max_entries", "Entries to return, 1-5000 (default 200)."), list("patterns", "Globs relative to path that entries must match."),
			list("exclude_patterns", "Globs relative to path to leave out (a folder's whole subtree)."), str("entry_type", "file, dir or any (default any).", false)},
		s.listTool)
	declare("search_text", "Search file contents", "Search your workspace's text files for plain text or an RE2 regular expression, with context lines.", r, gw, ro,
		[]tools.Param{counted(str("query", "Text, or a regular expression with regex=true; at most 1 KiB.", true)), flag("regex", "Treat query as a regular expression."),
			hashed(str("path", "Folder to search (default the root).", false)), list("include_globs", "Only files matching one of these globs."),
			num("context_lines", "Lines of context before and after, 0-10."), num("max_matches", "Matches to return, 1-1000 (default 100).")}, s.searchTool)
	declare("file_edit", "Edit a file", "Change one file: replace, patch (unified diff), add, delete or move; dry_run previews the diff without writing.", w, gw, rw,
		[]tools.Param{str("action", "replace, patch, add, delete or move.", true), path,
			counted(str("old_text", "replace: the exact text to replace.", false)), counted(str("new_text", "replace: the text to put instead.", false)),
			num("expected_matches", "replace: how many times old_text must occur (default exactly once); a different count refuses the edit."),
			counted(str("patch", "patch: a unified diff of this file.", false)), counted(str("content", "add: the new file's text.", false)),
			hashed(str("to_path", "move: the new path.", false)), flag("dry_run", "Only preview: return the diff, write nothing.")}, s.editTool)
	declare("exec_command", "Run a command", "Run a shell command in your workspace container; one still running after wait_ms returns a session_id to watch.", w, gw, rw,
		[]tools.Param{counted(str("cmd", "Shell command (sh -c), at most 16 KiB.", true)), hashed(str("workdir", "Folder relative to /workspace to run in.", false)),
			num("timeout_ms", "Kill the command after this long (default 600000, at most 7200000)."),
			num("wait_ms", "How long to wait before answering with a session (default 10000, at most 60000)."),
			flag("tty", "Run with a terminal."), str("skill", "Run with an installed Skill: its folder as the working directory, its environment set.", false)},
		s.execTool)
	declare("session_observe", "Watch command sessions", "List your command sessions, or read one's status and output since a cursor.", r, gw, ro,
		[]tools.Param{str("action", "list or status (default list).", false), str("session_id", "status: the session.", false),
			num("cursor", "status: output offset to read from (next_cursor of the last read)."), num("max_bytes", "status: output bytes to return (default 65536)."),
			num("wait_ms", "status: wait up to this long for new output or the end (at most 60000).")}, s.observeTool)
	declare("session_act", "Act on a command session", "Write input to a running command session, kill one, or kill all of yours.", w, gw, rw,
		[]tools.Param{str("action", "write, kill or kill_all.", true), str("session_id", "write and kill: the session.", false),
			counted(str("input", "write: text sent to the command's standard input.", false)), flag("close_stdin", "write: close the input afterwards.")},
		s.actTool)
	s.registerMore(declare, r, w, ro, rw)
}

// declareFunc is Register's helper, passed on to the other declarations.
type declareFunc func(name, title, desc string, scope string, gate tools.Gate, a tools.Annotations, params []tools.Param, h tools.Handler)

func (s *Service) registerMore(declare declareFunc, r, w string, ro, rw tools.Annotations) {
	gw := tools.GateWorkspace
	declare("task_manage", "Track a multi-step task", "Track a multi-step task: create, list, get, checkpoint, block, resume, final_review, complete (needs evidence). State only.", w, tools.GateNone, rw,
		[]tools.Param{str("action", "create, list, get, checkpoint, block, resume, final_review or complete.", true), str("task_id", "The task (all but create and list).", false),
			str("title", "create: the task's title.", false), list("steps", "create: the planned steps, as strings."),
			counted(str("note", "checkpoint and resume: what was done or changed.", false)), list("steps_done", "checkpoint: numbers (from 1) of steps now done."),
			str("reason", "block: what blocks the task.", false), counted(str("summary", "final_review and complete: what was done and verified.", false)),
			list("evidence", "checkpoint, final_review, complete: objects {kind: command|test|file|artifact|url|observation, detail}."),
			str("state", "list: only tasks in this state.", false), num("limit", "list: at most this many (default 50)."),
			str("board_task_id", "create: the board task this tracks (default: your round's task).", false)}, s.taskTool)
	declare("skill_package", "Manage Skills", "Validate, install, activate or roll back a Skill (a folder with SKILL.md), and set, unset or list its environment.", w, gw, rw,
		[]tools.Param{str("action", "validate, install, activate, rollback, env_set, env_unset or env_list.", true),
			hashed(str("path", "validate and install: the Skill's folder in your workspace.", false)), str("name", "The Skill (all but validate and install).", false),
			num("version", "activate: the version to make active."), str("env_name", "env_set and env_unset: the variable, e.g. API_TOKEN.", false),
			tools.Param{Name: "env_value", Type: "string", Secret: true, Description: "env_set: the value; sealed at rest, never shown, redacted from command output."}},
		s.skillTool)
	declare("skill_search", "Search for Skills", "Search for Skills: all (default), github, hub (one registry with hub) or bank (what this deployment installed).", r, gw, ro,
		[]tools.Param{str("query", "Words to look for.", true), str("source", "all, github, hub or bank (default all).", false),
			str("hub", "source=hub: one registry (anthropic-skills, github, clawhub, lobehub, skills-sh). Not with bank.", false), num("limit", "Results, 1-50 (default 10).")},
		s.skillSearchTool)
	declare("file_publish", "Publish a file", "Publish a workspace file, or a folder as tar.gz, as an immutable artifact with its hash, size and an expiring download URL.", w, gw, rw,
		[]tools.Param{hashed(str("path", "File or folder relative to /workspace.", true)), str("name", "The artifact's file name (default the path's last part).", false),
			num("ttl_seconds", "How long the download URL works (default 3600, at most 604800).")}, s.publishTool)
	declare("view_image", "View an image", "Load an image from an artifact, a workspace path or an allowed https URL, resized and converted to fit model limits.", r, gw, ro,
		[]tools.Param{str("artifact_id", "An artifact of yours.", false), hashed(str("path", "An image file of your workspace.", false)),
			tools.Param{Name: "url", Type: "string", Secret: true, Audit: tools.AuditHost, Description: "An https URL on your workspace's allowed hosts."},
			num("max_dimension", "Longest side in pixels after resizing, 64-2048 (default 1568).")}, s.viewImageTool)
	declare("visor_context", "Workspace context", "Your runtime facts, installed Skills, upstream MCP servers you may use, and the operating rules, in compact form.", r, gw, ro,
		nil, s.contextTool)
}
