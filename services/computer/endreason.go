package computer

import "strings"

// Why a session ended. Sessions store one of these codes as their end
// reason; the dashboard translates them and the tools word them in
// English (EndReasonText).
const (
	EndStartFailed = "start_failed"
	EndIdle        = "idle"
	EndLifetime    = "lifetime"
	EndByEmployee  = "stopped_by_employee"
	EndByOperator  = "stopped_by_operator"
	EndWorkerLost  = "worker_lost"
	// EndWorkerSilent: a janitor found the worker holding it dead.
	EndWorkerSilent = "worker_silent"
	// EndOther is any stored reason that is none of the above.
	EndOther = "other"
)

// EndReasons lists every end-reason code.
var EndReasons = []string{EndStartFailed, EndIdle, EndLifetime, EndByEmployee, EndByOperator, EndWorkerLost, EndWorkerSilent, EndOther}

// EndReasonCode returns the code of a stored end reason: a code as it is,
// the English sentence a session stored before codes existed as its code,
// anything else as EndOther, and "" (an open session) as "".
func EndReasonCode(stored string) string {
	switch {
	case stored == "":
		return ""
	case stored == "start failed":
		return EndStartFailed
	case strings.HasPrefix(stored, "idle for more than"):
		return EndIdle
	case strings.HasPrefix(stored, "older than"):
		return EndLifetime
	case stored == "stopped by its employee":
		return EndByEmployee
	case stored == "stopped by an operator":
		return EndByOperator
	case stored == "the worker holding it, or its container, is gone":
		return EndWorkerLost
	case stored == "the worker holding it stopped answering":
		return EndWorkerSilent
	}
	for _, c := range EndReasons {
		if stored == c {
			return c
		}
	}
	return EndOther
}

// EndReasonText words an end reason in English, for the tools' answers.
func EndReasonText(stored string) string {
	switch EndReasonCode(stored) {
	case EndStartFailed:
		return "start failed"
	case EndIdle:
		return "idle for more than " + IdleTimeout.String()
	case EndLifetime:
		return "older than " + SessionLifetime.String()
	case EndByEmployee:
		return "stopped by its employee"
	case EndByOperator:
		return "stopped by an operator"
	case EndWorkerLost:
		return "the worker holding it, or its container, is gone"
	case EndWorkerSilent:
		return "the worker holding it stopped answering"
	}
	return "ended"
}
