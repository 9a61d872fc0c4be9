package main

import (
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHelpExplainsEveryCommand(t *testing.T) {
	t.Parallel()
	res := runCmd(t, nil, "help")
	require.NoError(t, res.err)
	for _, c := range commands() {
		require.Contains(t, res.stdout, "  "+c.name+" ", "visor help lists %s", c.name)
		require.NotEmpty(t, c.summary)
		require.NotEmpty(t, c.detail)

		res := runCmd(t, nil, "help", c.name)
		require.NoError(t, res.err)
		require.Contains(t, res.stdout, "usage: visor "+c.name)
		require.Contains(t, res.stdout, c.detail)

		res = runCmd(t, nil, c.name, "-h")
		require.True(t, errors.Is(res.err, flag.ErrHelp), "%s -h: %v", c.name, res.err)
		require.Contains(t, res.stdout+res.stderr, "usage: visor "+c.name)
	}
	for _, want := range []string{"serve", "worker", "migrate", "dev", "version", "tenant", "member", "agent"} {
		_, ok := findCommand(want)
		require.True(t, ok, want)
	}
}

func TestUsageMistakes(t *testing.T) {
	t.Parallel()
	res := runCmd(t, nil)
	require.ErrorIs(t, res.err, errUsage)
	require.Contains(t, res.stdout, "commands:")
	res = runCmd(t, nil, "frobnicate")
	require.ErrorIs(t, res.err, errUsage)
	require.Contains(t, res.stderr, `unknown command "frobnicate"`)
	res = runCmd(t, nil, "serve", "-nope")
	require.ErrorIs(t, res.err, errUsage)
	res = runCmd(t, nil, "agent", "create", "-h")
	require.ErrorIs(t, res.err, flag.ErrHelp)
	require.Contains(t, res.stderr, "-reports-to")
}

func TestVersion(t *testing.T) {
	t.Parallel()
	res := runCmd(t, nil, "version")
	require.NoError(t, res.err)
	require.True(t, strings.HasPrefix(res.stdout, "visor dev (commit "), res.stdout)
}
