package agents

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

type fakeDir struct {
	agents  []identity.Agent
	listErr error
}

func (d *fakeDir) Agent(_ context.Context, _, id uuid.UUID) (identity.Agent, error) {
	for _, a := range d.agents {
		if a.ID == id {
			return a, nil
		}
	}
	return identity.Agent{}, fault.New(fault.NotFound, "agent not found")
}

func (d *fakeDir) AgentByName(_ context.Context, _ uuid.UUID, name string) (identity.Agent, error) {
	for _, a := range d.agents {
		if a.Name == name {
			return a, nil
		}
	}
	return identity.Agent{}, fault.New(fault.NotFound, "agent not found")
}

func (d *fakeDir) ListAgents(context.Context, uuid.UUID) ([]identity.Agent, error) {
	return d.agents, d.listErr
}

func (d *fakeDir) AgentsAfter(context.Context, uuid.UUID, string, int) ([]identity.Agent, error) {
	return d.agents, d.listErr
}

func (d *fakeDir) AgentNames(_ context.Context, _ uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	names := map[uuid.UUID]string{}
	for _, a := range d.agents {
		if slices.Contains(ids, a.ID) {
			names[a.ID] = a.Name
		}
	}
	return names, nil
}

type fakeRes struct {
	list []Reservation
	err  error
}

func (r *fakeRes) Reserve(_ context.Context, v Reservation) error {
	r.list = append(r.list, v)
	return nil
}
func (r *fakeRes) List(context.Context, uuid.UUID) ([]Reservation, error) { return r.list, r.err }
func (r *fakeRes) Release(context.Context, uuid.UUID, string) error       { return nil }

func TestReservedNames(t *testing.T) {
	ctx := context.Background()
	trashed := identity.Agent{ID: uuid.New(), Name: "old", Status: identity.AgentTrashed}
	active := identity.Agent{ID: uuid.New(), Name: "live", Status: identity.AgentActive}
	tests := []struct {
		name    string
		dir     *fakeDir
		res     *fakeRes
		check   string
		code    fault.Code
		message string
	}{
		{"a free name", &fakeDir{agents: []identity.Agent{trashed}}, &fakeRes{}, "new", "", ""},
		{"in the trash", &fakeDir{agents: []identity.Agent{trashed}}, &fakeRes{}, "old", fault.Conflict, "in the trash"},
		{"recorded without its row", &fakeDir{}, &fakeRes{list: []Reservation{{Name: "gone"}}}, "gone", fault.Conflict, "belonged to a removed"},
		{"the trash cannot be listed", &fakeDir{listErr: errors.New("db down")}, &fakeRes{}, "new", fault.Unavailable, "trash cannot be listed"},
		{"the reservations cannot be listed", &fakeDir{}, &fakeRes{err: errors.New("db down")}, "new", fault.Unavailable, "cannot be listed"},
		{"an operator reused the name", &fakeDir{agents: []identity.Agent{active}}, &fakeRes{list: []Reservation{{Name: "live"}}}, "live", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewService(nil, tc.dir, tc.res)
			err := s.checkName(ctx, uuid.New(), tc.check)
			if tc.code == "" {
				require.NoError(t, err)
				return
			}
			require.Equal(t, tc.code, fault.CodeOf(err))
			require.Contains(t, fault.Message(err), tc.message)
		})
	}
}

func TestDelegation(t *testing.T) {
	mk := func(name, dept string, boss uuid.UUID) identity.Agent {
		return identity.Agent{ID: uuid.New(), Name: name, Department: dept, ReportsTo: boss}
	}
	ceo := mk("ceo", "exec", uuid.Nil)
	vp := mk("vp", "eng", ceo.ID)
	dev := mk("dev", "platform", vp.ID)
	peer := mk("peer", "eng", uuid.Nil)
	sales := mk("sales", "sales", uuid.Nil)
	all := []identity.Agent{ceo, vp, dev, peer, sales}
	off := false
	tests := []struct {
		name   string
		policy identity.DelegationPolicy
		a, b   identity.Agent
		want   bool
	}{
		{"self", identity.DelegationPolicy{}, sales, sales, true},
		{"same department", identity.DelegationPolicy{}, vp, peer, true},
		{"same department switched off", identity.DelegationPolicy{SameDepartment: &off}, vp, peer, false},
		{"manager over a report, two levels", identity.DelegationPolicy{}, ceo, dev, true},
		{"report up to its manager", identity.DelegationPolicy{}, dev, vp, true},
		{"reports_to switched off", identity.DelegationPolicy{ReportsTo: &off}, ceo, dev, false},
		{"unrelated", identity.DelegationPolicy{}, dev, sales, false},
		{"whitelisted pair, either order", identity.DelegationPolicy{Pairs: [][2]string{{"sales", "dev"}}}, dev, sales, true},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, Related(tc.policy, all, tc.a.ID, tc.b.ID), tc.name)
	}
}
