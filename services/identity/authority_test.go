package identity

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
)

// TestAuthorityMatrix spells the matrix out role by role, so a change to
// who may do what is a visible change to this table, and an action added
// without a row fails here.
func TestAuthorityMatrix(t *testing.T) {
	t.Parallel()
	o, a, op, v := RoleOwner, RoleAdmin, RoleOperator, RoleViewer
	want := map[Action][]Role{
		ReadTenant:        {o, a, op, v},
		ReadAudit:         {o, a, op, v},
		ManageOwnConsents: {o, a, op, v},
		ManageAgents:      {o, a, op},
		ManageGrants:      {o, a, op},
		ManageKeys:        {o, a, op},
		ManageClients:     {o, a},
		ManageSettings:    {o, a},
		ManageMembers:     {o, a},
		ManageOwners:      {o},
		CallReadTools:     {o, a, op, v},
		CallWriteTools:    {o, a, op},
		CallAdminTools:    {o, a, op},
		ManageTenants:     {},
	}
	require.Len(t, Actions, len(want), "every action needs a row here")
	for _, act := range Actions {
		roles, ok := want[act]
		require.True(t, ok, "no expected row for %s", act)
		for _, r := range Roles {
			require.Equal(t, contains(roles, r), r.Allows(act), "%s may %s", r, act)
		}
		require.False(t, Role("root").Allows(act), "an unknown role may do nothing")
	}
	require.Equal(t, []string{ScopeToolsRead, ScopeAdminRead}, RoleViewer.Scopes())
	require.Equal(t, AllScopes, RoleOperator.Scopes())
	kept, withheld := RoleViewer.Bound([]string{ScopeToolsAdmin, ScopeToolsRead, ScopeAdminWrite})
	require.Equal(t, []string{ScopeToolsRead}, kept)
	require.Equal(t, []string{ScopeToolsAdmin, ScopeAdminWrite}, withheld)
}

func contains(rs []Role, r Role) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// TestPrincipalCheck: the matrix applied to each kind of principal.
func TestPrincipalCheck(t *testing.T) {
	t.Parallel()
	member := func(r Role) Principal {
		return Principal{Kind: KindOperator, MemberID: uuid.New(), Role: r, Scopes: r.Scopes(), CredentialID: "session:x"}
	}
	key := func(scopes ...string) Principal {
		return Principal{Kind: KindOperator, CredentialID: "key:k", Scopes: scopes}
	}
	operatorsKey := key(ScopeAdminWrite, ScopeToolsAdmin)
	operatorsKey.Role, operatorsKey.CreatorID = RoleOperator, uuid.New()
	platform := Principal{Kind: KindOperator, CredentialID: PlatformCredential}
	employee := Principal{Kind: KindEmployee, AgentID: uuid.New(), Scopes: AllScopes}
	external := Principal{Kind: KindExternal, MemberID: uuid.New(), Role: RoleOwner, Scopes: AllScopes}
	tests := []struct {
		name string
		p    Principal
		act  Action
		ok   bool
	}{
		{"viewer reads", member(RoleViewer), ReadTenant, true},
		{"viewer manages no agents", member(RoleViewer), ManageAgents, false},
		{"operator manages agents", member(RoleOperator), ManageAgents, true},
		{"operator manages no members", member(RoleOperator), ManageMembers, false},
		{"admin manages members", member(RoleAdmin), ManageMembers, true},
		{"admin manages no owners", member(RoleAdmin), ManageOwners, false},
		{"owner manages owners", member(RoleOwner), ManageOwners, true},
		{"no member creates tenants", member(RoleOwner), ManageTenants, false},
		{"a tools:read key adds no members", key(ScopeToolsRead), ManageMembers, false},
		{"a tools:read key changes no settings", key(ScopeToolsRead), ManageSettings, false},
		{"an admin:read key reads", key(ScopeAdminRead), ReadAudit, true},
		{"an admin:read key writes nothing", key(ScopeAdminRead), ManageAgents, false},
		{"a platform-made admin:write key manages owners", key(ScopeAdminWrite), ManageOwners, true},
		{"an operator's key manages agents", operatorsKey, ManageAgents, true},
		{"an operator's key manages no members", operatorsKey, ManageMembers, false},
		{"an employee never uses the admin API", employee, ReadTenant, false},
		{"an employee calls admin tools with the scope", employee, CallAdminTools, true},
		{"an OAuth client never uses the admin API", external, ReadTenant, false},
		{"the platform token does anything", platform, ManageOwners, true},
		{"the platform token creates tenants", platform, ManageTenants, true},
		{"the system does anything in a tenant", System, ManageOwners, true},
		{"but creates no tenants", System, ManageTenants, false},
	}
	for _, tc := range tests {
		err := tc.p.Check(tc.act)
		require.Equal(t, tc.ok, err == nil, "%s: %v", tc.name, err)
		if err != nil {
			require.True(t, fault.Is(err, fault.Forbidden), tc.name)
		}
	}
}

// TestDelegate: a credential is never made with a scope its creator lacks;
// defaults shrink to what the creator holds.
func TestDelegate(t *testing.T) {
	t.Parallel()
	viewer := Principal{Kind: KindOperator, MemberID: uuid.New(), Role: RoleViewer, Scopes: RoleViewer.Scopes()}
	got, err := viewer.Delegate(nil, []string{ScopeToolsAdmin, ScopeToolsWrite, ScopeToolsRead})
	require.NoError(t, err)
	require.Equal(t, []string{ScopeToolsRead}, got)
	_, err = viewer.Delegate([]string{ScopeToolsWrite}, nil)
	require.True(t, fault.Is(err, fault.Forbidden), "%v", err)
	_, err = viewer.Delegate([]string{"root"}, nil)
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)
	got, err = System.Delegate([]string{ScopeToolsRead, ScopeAdminWrite, ScopeToolsRead}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{ScopeAdminWrite, ScopeToolsRead}, got)
	reader := Principal{Kind: KindOperator, CredentialID: "key:k", Scopes: []string{ScopeAdminWrite, ScopeToolsRead}}
	_, err = reader.Delegate([]string{ScopeToolsAdmin}, nil)
	require.True(t, fault.Is(err, fault.Forbidden), "a tools:read key mints no tools:admin credential")
}

// TestCheckMemberChange: only owners touch owners, admins manage the rest,
// and nobody raises their own role.
func TestCheckMemberChange(t *testing.T) {
	t.Parallel()
	as := func(r Role) Principal {
		return Principal{Kind: KindOperator, MemberID: uuid.New(), Role: r, Scopes: r.Scopes(), CredentialID: "session:x"}
	}
	owner, admin, operator := as(RoleOwner), as(RoleAdmin), as(RoleOperator)
	someOwner := &Member{ID: uuid.New(), Role: RoleOwner}
	someViewer := &Member{ID: uuid.New(), Role: RoleViewer}
	adminSelf := &Member{ID: admin.MemberID, Role: RoleAdmin}
	operatorsKey := Principal{Kind: KindOperator, CredentialID: "key:k", Scopes: AllScopes, Role: RoleAdmin, CreatorID: admin.MemberID}
	tests := []struct {
		name string
		p    Principal
		c    MemberChange
		ok   bool
	}{
		{"an operator adds no member", operator, MemberChange{Role: RoleViewer}, false},
		{"an admin adds a viewer", admin, MemberChange{Role: RoleViewer}, true},
		{"an admin adds no owner", admin, MemberChange{Role: RoleOwner}, false},
		{"an admin promotes no one to owner", admin, MemberChange{Before: someViewer, Role: RoleOwner}, false},
		{"an admin demotes no owner", admin, MemberChange{Before: someOwner, Role: RoleViewer}, false},
		{"an admin sets no owner's password", admin, MemberChange{Before: someOwner, Password: true}, false},
		{"an admin removes no owner", admin, MemberChange{Before: someOwner, Remove: true}, false},
		{"an admin sets a viewer's password", admin, MemberChange{Before: someViewer, Password: true}, true},
		{"an owner makes an owner", owner, MemberChange{Before: someViewer, Role: RoleOwner}, true},
		{"an owner sets an owner's password", owner, MemberChange{Before: someOwner, Password: true}, true},
		{"an admin may lower their own role", admin, MemberChange{Before: adminSelf, Role: RoleViewer}, true},
		{"an admin's key cannot raise the admin", operatorsKey, MemberChange{Before: adminSelf, Role: RoleOwner}, false},
		{"the system makes owners", System, MemberChange{Role: RoleOwner}, true},
	}
	for _, tc := range tests {
		err := tc.p.CheckMemberChange(tc.c)
		require.Equal(t, tc.ok, err == nil, "%s: %v", tc.name, err)
	}
	// A key cannot raise the member who made it, whatever its scopes.
	selfRaise := Principal{Kind: KindOperator, CredentialID: "key:k", Scopes: AllScopes, CreatorID: someViewer.ID}
	err := selfRaise.CheckMemberChange(MemberChange{Before: someViewer, Role: RoleAdmin})
	require.True(t, fault.Is(err, fault.Forbidden), "%v", err)
}
