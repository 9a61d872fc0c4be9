package docker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/docker"
	"github.com/visorhq/visor/services/lifecycle"
)

// TestJanitorRunsFirstBeforeStartReturnsAndLastOnceAtStop: a worker never
// takes work before its earlier life's leftovers are gone, ticks run until
// Stop, and what the kind holds is ended once however often Stop is called.
func TestJanitorRunsFirstBeforeStartReturnsAndLastOnceAtStop(t *testing.T) {
	t.Parallel()
	var first, last int
	ticked := make(chan struct{}, 1)
	j := &docker.Janitor{Every: time.Millisecond,
		First: func(context.Context) { first++ },
		Tick: func(context.Context) {
			select {
			case ticked <- struct{}{}:
			default:
			}
		},
		Last: func() { last++ },
	}
	require.NoError(t, j.Start(t.Context()))
	require.Equal(t, 1, first, "First ran before Start returned")
	require.ErrorIs(t, j.Start(t.Context()), lifecycle.ErrStarted)
	<-ticked
	j.Stop()
	j.Stop()
	require.Equal(t, 1, last)

	idle := &docker.Janitor{Every: time.Hour, First: func(context.Context) {}, Tick: func(context.Context) {}, Last: func() { last++ }}
	idle.Stop()
	require.Equal(t, 1, last, "a janitor that never started ends nothing")
}
