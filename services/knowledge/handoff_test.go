package knowledge_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/knowledge"
)

func TestHandoffModes(t *testing.T) {
	svc := knowledge.NewService(knowledge.Config{})
	refused := func(in knowledge.HandoffInput, code fault.Code, want string) {
		t.Helper()
		_, err := svc.CheckHandoff(in)
		require.Error(t, err)
		require.Equal(t, code, fault.CodeOf(err), fault.Message(err))
		require.Contains(t, fault.Message(err), want)
	}
	refused(knowledge.HandoffInput{Status: knowledge.Continue}, fault.Invalid, "status continue requires non-empty next_steps")
	refused(knowledge.HandoffInput{Status: knowledge.Continue, NextSteps: []string{"  "}}, fault.Invalid, "requires non-empty next_steps")
	refused(knowledge.HandoffInput{Status: knowledge.Continue, NextSteps: []string{"ship"}, Blocker: "the CI runner is down"}, fault.Invalid, "forbids blocker")
	refused(knowledge.HandoffInput{Status: knowledge.Complete, Note: "I finished"}, fault.Invalid, `"I finished" is not evidence`)
	refused(knowledge.HandoffInput{Status: knowledge.Complete, Evidence: []string{"PR 12 merged"}, NextSteps: []string{"tell ops"}}, fault.Invalid, "forbids blocker and next_steps")
	refused(knowledge.HandoffInput{Status: knowledge.Complete, Evidence: []string{"PR 12 merged"}, Blocker: "waiting for review by ops"}, fault.Invalid, "forbids blocker and next_steps")
	refused(knowledge.HandoffInput{Status: knowledge.Blocked}, fault.Invalid, "requires a specific blocker")
	refused(knowledge.HandoffInput{Status: knowledge.Blocked, Blocker: "blocked"}, fault.Invalid, "requires a specific blocker")
	refused(knowledge.HandoffInput{Status: knowledge.Blocked, Blocker: "stuck."}, fault.Invalid, "requires a specific blocker")
	refused(knowledge.HandoffInput{Status: "done", Note: "x"}, fault.Invalid, "status must be continue, complete or blocked")
	refused(knowledge.HandoffInput{Note: "x", NextSteps: []string{"y"}}, fault.Invalid, "need a status")

	h, err := svc.CheckHandoff(knowledge.HandoffInput{Status: knowledge.Blocked, Blocker: "本番DBの認証情報が失効した"})
	require.NoError(t, err, "a specific Japanese blocker is accepted")
	require.Equal(t, knowledge.Blocked, h.Status)
	h, err = svc.CheckHandoff(knowledge.HandoffInput{Status: knowledge.Complete, Evidence: []string{"https://ci.example/run/1 green"}})
	require.NoError(t, err)
	require.Equal(t, []string{"https://ci.example/run/1 green"}, h.Evidence)
	h, err = svc.CheckHandoff(knowledge.HandoffInput{Status: knowledge.Continue, NextSteps: []string{"write the migration"}})
	require.NoError(t, err)
	require.Len(t, h.NextSteps, 1)
}

func TestHandoffPlainNoteIsCutAt1200Characters(t *testing.T) {
	svc := knowledge.NewService(knowledge.Config{})
	note := strings.Repeat("引", 1300) // 3,900 bytes: under the byte cap, over the character cut
	h, err := svc.CheckHandoff(knowledge.HandoffInput{Note: note})
	require.NoError(t, err)
	require.True(t, h.Truncated)
	require.Equal(t, knowledge.PlainNoteChars, len([]rune(h.Note)), "cut by characters, not bytes")
	require.Equal(t, 3*knowledge.PlainNoteChars, h.Bytes)

	h, err = svc.CheckHandoff(knowledge.HandoffInput{Note: strings.Repeat("a", 1200)})
	require.NoError(t, err)
	require.False(t, h.Truncated)
}

// TestHandoffByteCapJapanese fills a structured hand-off to exactly the
// cap with three-byte characters: at the cap it is stored whole; one byte
// more and it is refused whole, never truncated.
func TestHandoffByteCapJapanese(t *testing.T) {
	svc := knowledge.NewService(knowledge.Config{})
	status := len("continue")
	// 16384 - 8 = 16376 bytes left: 5458 three-byte characters (16374) + "ab".
	step := strings.Repeat("次", 5458) + "ab"
	h, err := svc.CheckHandoff(knowledge.HandoffInput{Status: knowledge.Continue, NextSteps: []string{step}})
	require.NoError(t, err)
	require.Equal(t, knowledge.DefaultHandoffMaxBytes, h.Bytes)
	require.Equal(t, knowledge.DefaultHandoffMaxBytes, status+len(h.NextSteps[0]))
	require.Equal(t, step, h.NextSteps[0], "stored whole")

	_, err = svc.CheckHandoff(knowledge.HandoffInput{Status: knowledge.Continue, NextSteps: []string{step + "c"}})
	require.Equal(t, fault.TooLarge, fault.CodeOf(err))
	require.Equal(t, "Not stored: the hand-off is 16385 bytes of UTF-8, over the 16384-byte cap; it is refused whole, never truncated. Shorten it and call again.",
		fault.Message(err))
	// A multi-byte character that crosses the cap is not split: the whole call is refused.
	_, err = svc.CheckHandoff(knowledge.HandoffInput{Status: knowledge.Continue, NextSteps: []string{strings.Repeat("次", 5458) + "a次"}})
	require.Equal(t, fault.TooLarge, fault.CodeOf(err))

	small := knowledge.NewService(knowledge.Config{HandoffMaxBytes: 30})
	_, err = small.CheckHandoff(knowledge.HandoffInput{Status: knowledge.Blocked, Blocker: "認証情報が失効した件"}) // 7 + 30 bytes
	require.Equal(t, fault.TooLarge, fault.CodeOf(err), "the cap is configurable")
	require.Contains(t, fault.Message(err), "over the 30-byte cap")
}
