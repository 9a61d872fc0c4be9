package worker

import (
	"context"
	"log/slog"
)

// quieter drops records below min: River reports routine progress (job
// counts every few seconds) at info, which would drown Visor's own logs.
type quieter struct {
	slog.Handler
	min slog.Level
}

func (q quieter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= q.min && q.Handler.Enabled(ctx, l)
}

func (q quieter) WithAttrs(as []slog.Attr) slog.Handler {
	return quieter{q.Handler.WithAttrs(as), q.min}
}

func (q quieter) WithGroup(name string) slog.Handler {
	return quieter{q.Handler.WithGroup(name), q.min}
}

// riverLogger is log for River: warnings and errors only, unless log is at
// debug level, in which case River's chatter is useful.
func riverLogger(log *slog.Logger) *slog.Logger {
	if log.Enabled(context.Background(), slog.LevelDebug) {
		return log.With("component", "river")
	}
	return slog.New(quieter{log.Handler(), slog.LevelWarn}).With("component", "river")
}
