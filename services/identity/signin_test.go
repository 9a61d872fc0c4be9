package identity

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
)

// emailStore answers MemberByEmail from a map; Authenticate reads nothing else.
type emailStore struct {
	Store
	members map[string]Member
}

func (s emailStore) MemberByEmail(_ context.Context, _ uuid.UUID, email string) (Member, error) {
	m, ok := s.members[email]
	if !ok {
		return Member{}, fault.New(fault.NotFound, "no member %s", email)
	}
	return m, nil
}

func signInService(tb testing.TB) *Service {
	tb.Helper()
	m := Member{ID: uuid.New(), Email: "ann@acme.test", Role: RoleViewer, PasswordHash: HashSecret("ann's real password")}
	return NewService(emailStore{members: map[string]Member{m.Email: m}}, changes.Discard{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// TestSignInComparesAHashForEveryEmail: a sign-in for an email no member
// has does the same password hash comparison as a wrong password for a
// real member, so the two cannot be told apart by their timing, and both
// answer the same error.
func TestSignInComparesAHashForEveryEmail(t *testing.T) {
	s := signInService(t)
	var compared []string
	s.verify = func(hash, secret string) bool {
		compared = append(compared, hash)
		return VerifySecret(hash, secret)
	}
	ctx := context.Background()
	_, errMember := s.Authenticate(ctx, uuid.New(), "ann@acme.test", "a wrong password")
	_, errNobody := s.Authenticate(ctx, uuid.New(), "nobody@acme.test", "a wrong password")
	if len(compared) != 2 {
		t.Fatalf("%d hash comparisons for a wrong password and an unknown email, want one each", len(compared))
	}
	if compared[1] != dummyHash() || compared[0] == compared[1] {
		t.Fatal("the unknown email was not compared with the dummy hash")
	}
	if fault.CodeOf(errMember) != fault.Unauthorized || fault.Message(errMember) != fault.Message(errNobody) {
		t.Fatalf("the two failures differ: %v / %v", errMember, errNobody)
	}
	// The dummy hash costs what a member's does: same parameters.
	if dummyHash()[:30] != HashSecret("x")[:30] {
		t.Fatalf("dummy hash %q uses other parameters than members' hashes", dummyHash())
	}
	// Nobody signs in with the dummy hash's secret.
	if _, err := s.Authenticate(ctx, uuid.New(), "nobody@acme.test", "no member has this password"); err == nil {
		t.Fatal("signed in as nobody")
	}
	if _, err := s.Authenticate(ctx, uuid.New(), "ann@acme.test", "ann's real password"); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSignInFailures times a wrong password for a real member and a
// sign-in for an unknown email, and reports how their times compare
// (unknown/member, about 1 when neither reveals membership).
func BenchmarkSignInFailures(b *testing.B) {
	s := signInService(b)
	ctx := context.Background()
	var member, nobody time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		_, _ = s.Authenticate(ctx, uuid.New(), "ann@acme.test", "a wrong password")
		t1 := time.Now()
		_, _ = s.Authenticate(ctx, uuid.New(), "nobody@acme.test", "a wrong password")
		nobody += time.Since(t1)
		member += t1.Sub(t0)
	}
	b.ReportMetric(float64(member.Microseconds())/float64(b.N), "µs/member")
	b.ReportMetric(float64(nobody.Microseconds())/float64(b.N), "µs/unknown")
	b.ReportMetric(float64(nobody)/float64(member), "unknown/member")
}
