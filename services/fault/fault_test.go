package fault

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

func TestHTTPStatusCoversEveryCode(t *testing.T) {
	want := map[Code]int{
		Invalid: 400, Unauthorized: 401, Forbidden: 403, NotFound: 404, Conflict: 409,
		TooLarge: 413, RateLimited: 429, Internal: 500, Unavailable: 503,
	}
	for code, status := range want {
		if got := HTTPStatus(code); got != status {
			t.Errorf("HTTPStatus(%s) = %d, want %d", code, got, status)
		}
	}
	if got := HTTPStatus("made_up"); got != http.StatusInternalServerError {
		t.Errorf("an unknown code maps to %d, want 500", got)
	}
}

func TestCodeAndMessageSurviveWrapping(t *testing.T) {
	cause := errors.New("pq: connection refused at 10.0.0.5")
	err := fmt.Errorf("load agent: %w", Newf(Unavailable, cause, "the database is unreachable"))
	Wrap(&err, "tools/call %s", "create_agent")
	if CodeOf(err) != Unavailable || !Is(err, Unavailable) {
		t.Fatalf("CodeOf(%v) = %s, want %s", err, CodeOf(err), Unavailable)
	}
	if Message(err) != "the database is unreachable" {
		t.Fatalf("Message = %q: the safe message was lost or the cause leaked", Message(err))
	}
	if !errors.Is(err, cause) {
		t.Fatal("the internal cause is no longer in the chain")
	}
	plain := errors.New("boom at /var/lib/secret")
	if CodeOf(plain) != Internal || Message(plain) != "internal error" {
		t.Fatalf("an uncoded error must be Internal with a generic message, got %s %q", CodeOf(plain), Message(plain))
	}
	var nilErr error
	Wrap(&nilErr, "nothing")
	if nilErr != nil || CodeOf(nil) != "" {
		t.Fatal("Wrap or CodeOf invented an error from nil")
	}
}
