package board

import (
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

func ptr[T any](v T) *T { return &v }

// Shared parameters.
var (
	pTaskID   = tools.Param{Name: "task_id", Type: "string", Required: true, Description: "Id of the task."}
	pRoutine  = tools.Param{Name: "routine", Type: "string", Required: true, Description: "The routine's id, or its name; a name several routines share is refused with their ids."}
	pTags     = tools.Param{Name: "tags", Type: "array", Description: "Tags (strings). Tags starting outcome: or grant: and auto-research are placed by operators only."}
	pAssignee = tools.Param{Name: "assignee", Type: "string", Description: "Name of the AI employee to assign; empty string unassigns."}
)

var (
	write   = tools.Annotations{Destructive: ptr(false), OpenWorld: ptr(false)}
	destroy = tools.Annotations{Destructive: ptr(true), OpenWorld: ptr(false)}
)

func titled(a tools.Annotations, title string) tools.Annotations { a.Title = title; return a }

// Register declares the task board family in reg (catalog.Family).
func (s *Service) Register(reg *tools.Registry) {
	s.registerTasks(reg)
	s.registerRoutines(reg)
	s.registerTeam(reg)
}

func (s *Service) registerTasks(reg *tools.Registry) {
	add := func(t tools.Tool) { t.Family = "tasks"; reg.Register(t) }
	add(tools.Tool{Name: "tasks_list", Scope: identity.ScopeToolsRead, Handler: s.toolList,
		Description: "List the tenant's tasks and goals, newest first, with filters. Returns tasks and next_cursor for the next page.",
		Params: []tools.Param{
			{Name: "status", Type: "string", Description: "open, in_progress, blocked, done or cancelled."},
			{Name: "kind", Type: "string", Description: "task or goal."},
			{Name: "assignee", Type: "string", Description: "An AI employee's name, or me."},
			{Name: "parent_task_id", Type: "string", Description: "Only the sub-tasks of this task."},
			{Name: "tag", Type: "string", Description: "Only tasks carrying this tag."},
			{Name: "limit", Type: "integer", Description: "At most this many tasks, 1-100 (default 50)."},
			{Name: "cursor", Type: "string", Description: "next_cursor of the previous page."}},
		Annotations: tools.Annotations{Title: "List tasks", ReadOnly: true, OpenWorld: ptr(false)}})
	add(tools.Tool{Name: "tasks_create", Scope: identity.ScopeToolsWrite, Handler: s.toolCreate,
		Permission: tools.PermScheduleTasks, PermissionIf: hasSchedule,
		Description: "Create a task or goal, optionally under a parent and assigned; with schedule it is a routine. Refused: no relationship to the parent, 200 open sub-tasks, schedule if can_schedule_tasks=false.",
		Params: []tools.Param{
			{Name: "title", Type: "string", Required: true, Description: "Title, 1-300 bytes (a routine's name when schedule is set)."},
			{Name: "kind", Type: "string", Description: "task (default) or goal. An AI employee cannot later change a goal's title or description."},
			{Name: "description", Type: "string", Description: "What to do, at most 20,000 bytes."},
			{Name: "parent_task_id", Type: "string", Description: "Create it under this task; needs a relationship to that task. Inside a responsibility run the round's task is the default."},
			pAssignee, pTags,
			{Name: "schedule", Type: "string", Description: "Cron (\"0 9 * * 1-5\", @daily, \"@every 2h\") in the tenant's time zone: makes a routine run as the assignee (default: you)."},
			{Name: "acceptance_criteria", Type: "string", Description: "Refused for every MCP caller: operators set acceptance criteria through the admin API."}},
		Annotations: titled(write, "Create task")})
	add(tools.Tool{Name: "tasks_update", Scope: identity.ScopeToolsWrite, Handler: s.toolUpdate,
		Description: "Change a task's title, description, status, assignee or tags. Refused without being its assignee, claimer or creator or related to its assignee; a goal's title/description.",
		Params: []tools.Param{pTaskID,
			{Name: "title", Type: "string", Description: "New title."},
			{Name: "description", Type: "string", Description: "New description."},
			{Name: "status", Type: "string", Description: "open, in_progress or cancelled (open or in_progress unblocks a blocked task)."},
			pAssignee,
			{Name: "tags", Type: "array", Description: "Replaces the tags. outcome:, grant: and auto-research tags cannot be added, removed or reordered except by operators."},
			{Name: "acceptance_criteria", Type: "string", Description: "Refused for every MCP caller: operators set acceptance criteria through the admin API."}},
		Annotations: titled(write, "Update task")})
	add(tools.Tool{Name: "tasks_claim", Scope: identity.ScopeToolsWrite, Handler: s.toolClaim,
		Description: "Claim a task for yourself (AI employees). Refused for a task assigned to another employee unless you have a delegation relationship with it.",
		Params:      []tools.Param{pTaskID}, Annotations: titled(write, "Claim task")})
	add(tools.Tool{Name: "tasks_complete", Scope: identity.ScopeToolsWrite, Handler: s.toolComplete,
		Description: "Mark a task done: its task-scoped grants and rounds end. Refused unless you are its assignee or claimer, or related to its assignee.",
		Params:      []tools.Param{pTaskID, {Name: "summary", Type: "string", Description: "What was done, at most 8,000 bytes."}},
		Annotations: titled(write, "Complete task")})
	add(tools.Tool{Name: "tasks_block", Scope: identity.ScopeToolsWrite, Handler: s.toolBlock,
		Description: "Mark a task blocked, with the reason. Unblocking wakes its assignee. Refused unless you are its assignee or claimer, or related to its assignee.",
		Params:      []tools.Param{pTaskID, {Name: "reason", Type: "string", Required: true, Description: "What blocks it, 1-2,000 bytes."}},
		Annotations: titled(write, "Block task")})
	add(tools.Tool{Name: "activity_post", Scope: identity.ScopeToolsWrite, Handler: s.toolPost,
		Description: "Post a comment to a task's activity. Refused unless you are its assignee, claimer or creator, or related to its assignee.",
		Params:      []tools.Param{pTaskID, {Name: "text", Type: "string", Required: true, Description: "The comment, 1-8,000 bytes."}},
		Annotations: titled(write, "Post activity")})
}

func (s *Service) registerRoutines(reg *tools.Registry) {
	add := func(t tools.Tool) { t.Family = "routines"; reg.Register(t) }
	refused := " Refused unless the routine runs as you or you are related to the employee it runs as."
	add(tools.Tool{Name: "update_cron_task", Scope: identity.ScopeToolsWrite, Handler: s.toolUpdateRoutine,
		Description: "Change a routine's title, schedule, description, tags or assignee." + refused,
		Params: []tools.Param{pRoutine,
			{Name: "title", Type: "string", Description: "New name."},
			{Name: "schedule", Type: "string", Description: "New cron schedule, in the tenant's time zone."},
			{Name: "description", Type: "string", Description: "New description."},
			{Name: "assignee", Type: "string", Description: "Name of the AI employee it runs as."}, pTags},
		Annotations: titled(write, "Update routine")})
	add(tools.Tool{Name: "delete_cron_task", Scope: identity.ScopeToolsWrite, Handler: s.toolDeleteRoutine,
		Description: "Delete a routine; tasks of its past runs stay." + refused,
		Params:      []tools.Param{pRoutine}, Annotations: titled(destroy, "Delete routine")})
	add(tools.Tool{Name: "pause_cron_task", Scope: identity.ScopeToolsWrite, Handler: s.toolPauseRoutine,
		Description: "Pause a routine, or resume it with paused=false." + refused,
		Params:      []tools.Param{pRoutine, {Name: "paused", Type: "boolean", Description: "true (default) pauses, false resumes."}},
		Annotations: titled(write, "Pause routine")})
	add(tools.Tool{Name: "run_cron_task", Scope: identity.ScopeToolsWrite, Handler: s.toolRunRoutine,
		Description: "Run a routine once now: a task and one round of the employee it runs as." + refused,
		Params:      []tools.Param{pRoutine}, Annotations: titled(write, "Run routine")})
	reg.Register(tools.Tool{Name: "create_reminder", Family: "reminders", Scope: identity.ScopeToolsWrite, Handler: s.toolReminder,
		Permission:  tools.PermScheduleTasks,
		Description: "Wake an AI employee (default: you) at a time, with a note. Refused for another employee without a relationship, or when can_schedule_tasks is false.",
		Params: []tools.Param{
			{Name: "text", Type: "string", Required: true, Description: "The note, 1-2,000 bytes; delivered as data."},
			{Name: "at", Type: "string", Description: "When, RFC 3339 (2026-05-01T09:00:00Z). Give at or in_seconds."},
			{Name: "in_seconds", Type: "integer", Description: "When, in seconds from now."},
			{Name: "agent", Type: "string", Description: "Name of the AI employee to wake; default you."},
			{Name: "task_id", Type: "string", Description: "The task the reminder's round works on; default a new task."}},
		Annotations: titled(write, "Create reminder")})
}

func (s *Service) registerTeam(reg *tools.Registry) {
	reg.Register(tools.Tool{Name: "team_handoff", Family: "team", Scope: identity.ScopeToolsWrite, Handler: s.toolHandoff,
		Description: "Hand a task to another AI employee with a TaskPacket; it becomes the assignee and is woken. Refused as tasks_update is; a bad packet is rejected whole.",
		Params: []tools.Param{pTaskID,
			{Name: "to", Type: "string", Required: true, Description: "Name of the AI employee who takes the task."},
			{Name: "packet", Type: "string", Required: true, Description: PacketShape}},
		Annotations: titled(write, "Hand off task")})
	reg.Register(tools.Tool{Name: "send_to_agent", Family: "team", Scope: identity.ScopeToolsWrite, Handler: s.toolMessage,
		Permission:  tools.PermSendCrossAgent,
		Description: "Send a message to another AI employee; it arrives as a round on a new task assigned to it. Refused when can_send_cross_agent is false.",
		Params: []tools.Param{
			{Name: "to", Type: "string", Required: true, Description: "Name of the AI employee."},
			{Name: "message", Type: "string", Required: true, Description: "The message, 1-4,000 bytes; delivered as data."},
			{Name: "task_id", Type: "string", Description: "Put the message's task under this task (needs a relationship to it)."}},
		Annotations: titled(write, "Send to AI employee")})
	reg.Register(tools.Tool{Name: "spawn_agent", Family: "team", Scope: identity.ScopeToolsAdmin, Handler: s.toolSpawn,
		Permission:  tools.PermSendCrossAgent,
		Description: "Create an ephemeral AI employee for one task and hand it the task; it cannot create agents or schedule, and retires when the task ends. Refused if can_send_cross_agent=false.",
		Params: []tools.Param{pTaskID,
			{Name: "name", Type: "string", Description: "Its name (lower-case letters, digits, - or _); default made up."},
			{Name: "role", Type: "string", Description: "Its role, at most 100 bytes."}},
		Annotations: titled(write, "Spawn AI employee")})
}

func hasSchedule(args map[string]any) bool { _, ok := args["schedule"]; return ok }
