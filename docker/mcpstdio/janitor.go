package mcpstdio

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/visorhq/visor/docker"
)

// NewJanitor returns the manager's housekeeping on the shared janitor: at
// start it removes the containers and networks this worker id's earlier
// life left; every period it removes idle servers and those whose
// container ended; at shutdown it removes every server.
func NewJanitor(m *Manager, period time.Duration) *docker.Janitor {
	return &docker.Janitor{Every: period,
		First: func(ctx context.Context) {
			if _, err := docker.Sweep(ctx, m.cli, docker.MCPStdio, m.cfg.WorkerID, 0, nil); err != nil {
				m.log.Warn("sweep stdio server containers", "err", err)
			}
		},
		Tick: func(context.Context) { m.ReapIdle() },
		Last: m.CloseAll,
	}
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
