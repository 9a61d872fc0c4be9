package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// jobWords says where `visor help worker` mentions each job kind.
var jobWords = map[string]string{
	"deliver_wakeup":               "delivers wake-ups",
	"prune_wakeups":                "settled wake-ups",
	"prune_keys":                   "expired API keys",
	"oauth_cleanup":                "expired OAuth codes",
	"responsibility_wakeup":        "responsibility wake-ups",
	"responsibility_tick":          "scheduled runs",
	"responsibility_question_push": "operators' webhooks",
}

// TestWorkerHelpPromisesOnlyItsJobs: `visor help worker` names every job
// kind declared in the repository (a new one fails here until the help
// mentions it) and none of the jobs Visor does not have.
func TestWorkerHelpPromisesOnlyItsJobs(t *testing.T) {
	res := runCmd(t, nil, "help", "worker")
	require.NoError(t, res.err, res.stderr)
	kinds := declaredJobKinds(t)
	require.NotEmpty(t, kinds)
	for _, kind := range kinds {
		words, ok := jobWords[kind]
		require.True(t, ok, "job kind %q is not described in `visor help worker` (and jobWords)", kind)
		require.Contains(t, res.stdout, words, kind)
	}
	require.Contains(t, res.stdout, "routines and reminders") // the dispatcher, which is no River job
	require.Contains(t, res.stdout, "VISOR_SANDBOX_WORKER")   // the worker plane's script runs, which are no River jobs
	require.Contains(t, res.stdout, "VISOR_COMPUTER_WORKER")  // and its browser sessions
	for _, missing := range []string{"grant expiry"} {
		require.NotContains(t, res.stdout, missing, "the worker runs no such job")
	}
}

// declaredJobKinds finds every River job kind in the repository's Go code.
func declaredJobKinds(t *testing.T) []string {
	t.Helper()
	kindRE := regexp.MustCompile(`\) Kind\(\) string \{ return "([a-z0-9_]+)" \}`)
	var kinds []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range kindRE.FindAllStringSubmatch(string(b), -1) {
			kinds = append(kinds, m[1])
		}
		return nil
	})
	require.NoError(t, err)
	return kinds
}
