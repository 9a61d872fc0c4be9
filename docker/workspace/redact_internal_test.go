package workspace

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRedactionAcrossCuts: a Skill variable's value is redacted from a
// session's output even when the command writes it in pieces and when a
// read's window cuts through it: no sequence of reads, each redacted as
// an answer is, puts the value back together.
func TestRedactionAcrossCuts(t *testing.T) {
	const secret = "tok-3f9a1c77e2"
	s := &session{changed: make(chan struct{}), done: make(chan struct{}),
		redact: newStreamRedactor(map[string]string{secret: "[redacted:API_TOKEN]", "abab": "[redacted:AB]"})}
	answer := strings.NewReplacer(secret, "[redacted:API_TOKEN]", "abab", "[redacted:AB]") // what Do applies to each answer
	for _, chunk := range []string{"padding ", "tok-3f", "9a1c"} {
		n, err := s.Write([]byte(chunk))
		require.NoError(t, err)
		require.Equal(t, len(chunk), n)
	}
	running := s.view(0, 1<<20)
	require.Equal(t, "padding ", running.Output, "a prefix of the value is held back while it may go on")
	for _, chunk := range []string{"77e2 and ", secret[:3], secret[3:], " x", "aba", "bab", "!"} {
		_, _ = s.Write([]byte(chunk))
	}
	s.end(0, "")
	for _, window := range []int{1, 3, 5, 7, 11, 1 << 20} {
		var got strings.Builder
		for cur := int64(0); ; {
			v := s.view(cur, window)
			got.WriteString(answer.Replace(v.Output))
			if !v.OutputTruncated {
				break
			}
			cur = v.NextCursor
		}
		require.NotContains(t, got.String(), secret, "read %d bytes at a time", window)
		require.Equal(t, "padding [redacted:API_TOKEN] and [redacted:API_TOKEN] x[redacted:AB]ab!", got.String(), "read %d bytes at a time", window)
	}
}
