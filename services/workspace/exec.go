package workspace

import (
	"strings"
	"time"

	"github.com/visorhq/visor/services/fault"
)

// Limits of commands and sessions.
const (
	MaxCommandBytes  = 16 << 10
	DefaultTimeout   = 10 * time.Minute
	MaxTimeout       = 2 * time.Hour
	DefaultWait      = 10 * time.Second // how long exec_command waits before answering with a session
	MaxWait          = 60 * time.Second
	MaxOutputKept    = 4 << 20  // bytes of output a session keeps (the oldest go first)
	DefaultReadBytes = 64 << 10 // output one answer carries
	MaxOutputRead    = 512 << 10
	MaxInputBytes    = 64 << 10
	MaxSessions      = 16 // sessions one workspace keeps, running or finished
	KeepFinished     = 15 * time.Minute
)

// ExecArgs are exec_command's arguments, after checks. Env holds the
// variables of the Skill the command runs with, opened on the worker from
// their sealed form in Postgres; it is never marshalled (so never sent
// over the worker plane) nor logged.
type ExecArgs struct {
	Cmd       string            `json:"cmd"`
	Workdir   string            `json:"workdir,omitempty"`
	TimeoutMS int64             `json:"timeout_ms,omitempty"`
	WaitMS    int64             `json:"wait_ms,omitempty"`
	TTY       bool              `json:"tty,omitempty"`
	Skill     string            `json:"skill,omitempty"`
	SkillRev  int               `json:"skill_version,omitempty"`
	Env       map[string]string `json:"-"`
}

// Check validates a's sizes and fills defaults.
func (a *ExecArgs) Check() error {
	if strings.TrimSpace(a.Cmd) == "" || len(a.Cmd) > MaxCommandBytes || strings.ContainsRune(a.Cmd, 0) {
		return fault.New(fault.Invalid, "cmd must be 1 byte to 16 KiB of shell command")
	}
	if a.TimeoutMS < 0 || time.Duration(a.TimeoutMS)*time.Millisecond > MaxTimeout {
		return fault.New(fault.Invalid, "timeout_ms must be at most %d", MaxTimeout.Milliseconds())
	}
	if a.TimeoutMS == 0 {
		a.TimeoutMS = DefaultTimeout.Milliseconds()
	}
	if a.WaitMS < 0 || time.Duration(a.WaitMS)*time.Millisecond > MaxWait {
		return fault.New(fault.Invalid, "wait_ms must be 0-%d", MaxWait.Milliseconds())
	}
	if a.WaitMS == 0 {
		a.WaitMS = DefaultWait.Milliseconds()
	}
	if a.Workdir != "" {
		if _, err := CleanPath(a.Workdir); err != nil {
			return err
		}
	}
	return nil
}

// Session states.
const (
	Running = "running"
	Exited  = "exited"
)

// SessionView is a command session as the tools show it. CommandOK,
// ExitCode and CommandError are set only once the command has ended; a
// running command reports none of them.
type SessionView struct {
	SessionID    string    `json:"session_id"`
	Cmd          string    `json:"cmd"`
	Status       string    `json:"status"`
	TTY          bool      `json:"tty"`
	StartedAt    time.Time `json:"started_at"`
	EndedAt      time.Time `json:"ended_at,omitzero"`
	DurationMS   int64     `json:"duration_ms"`
	CommandOK    *bool     `json:"command_ok,omitempty"`
	ExitCode     *int      `json:"exit_code,omitempty"`
	CommandError string    `json:"command_error,omitempty"`
	// Output is the output from Cursor on, NextCursor where the next read
	// starts; Dropped counts bytes before Cursor the session no longer
	// keeps; OutputTruncated says more output follows NextCursor.
	Output          string `json:"output"`
	Cursor          int64  `json:"cursor"`
	NextCursor      int64  `json:"next_cursor"`
	Dropped         int64  `json:"dropped_bytes,omitempty"`
	OutputTruncated bool   `json:"output_truncated"`
	OutputBytes     int64  `json:"output_bytes"`
}

// ObserveArgs are session_observe's arguments.
type ObserveArgs struct {
	Action    string `json:"action"` // list or status
	SessionID string `json:"session_id,omitempty"`
	Cursor    int64  `json:"cursor,omitempty"`
	MaxBytes  int    `json:"max_bytes,omitempty"`
	WaitMS    int64  `json:"wait_ms,omitempty"`
}

// ActArgs are session_act's arguments.
type ActArgs struct {
	Action    string `json:"action"` // write, kill or kill_all
	SessionID string `json:"session_id,omitempty"`
	Input     string `json:"input,omitempty"`
	CloseIn   bool   `json:"close_stdin,omitempty"`
}

// ActResult says what session_act did.
type ActResult struct {
	Action  string   `json:"action"`
	Written int      `json:"written_bytes,omitempty"`
	Killed  []string `json:"killed"`
}
