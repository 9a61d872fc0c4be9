package upstream_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/plane"
	"github.com/visorhq/visor/services/secrets"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/upstream"
)

// envHost records the environment a worker's host was given.
type envHost struct{ env map[string]string }

func (h *envHost) Start(context.Context, uuid.UUID, upstream.StdioSpec) error { return nil }
func (h *envHost) Watch(context.Context, uuid.UUID, uuid.UUID, func())        {}
func (h *envHost) Tools(context.Context, uuid.UUID, upstream.StdioSpec, int) ([]upstreams.Tool, error) {
	return nil, nil
}
func (h *envHost) Call(_ context.Context, _ uuid.UUID, spec upstream.StdioSpec, _ string, _ json.RawMessage) (upstreams.Result, error) {
	h.env = spec.Env
	return upstreams.Result{Content: json.RawMessage(`[]`)}, nil
}

// TestStdioEnvironmentIsOpenedOnlyForItsTenantAndVersion: a worker opens
// an environment value sealed for a server's tenant and version; the same
// payload sent for another tenant, or claiming another version, is
// refused, and without keys the worker says what is missing.
func TestStdioEnvironmentIsOpenedOnlyForItsTenantAndVersion(t *testing.T) {
	t.Parallel()
	spec, err := secrets.NewKey("k1")
	require.NoError(t, err)
	keys, err := secrets.ParseKeyring(spec)
	require.NoError(t, err)
	tenant, server := uuid.New(), uuid.New()
	sealed, err := keys.Seal([]byte("s3cret"), upstream.StdioEnvContext(tenant, server, 3, "API_TOKEN"))
	require.NoError(t, err)
	op := func(version int64) json.RawMessage {
		raw, err := json.Marshal(map[string]any{"op": "call", "tool": "echo", "args": map[string]any{},
			"spec": upstream.StdioSpec{Server: server, Name: "tools", Version: version, Image: "img", Env: map[string]string{"API_TOKEN": sealed}}})
		require.NoError(t, err)
		return raw
	}
	host := &envHost{}
	run := func(k *secrets.Keyring, tenant uuid.UUID, payload json.RawMessage) error {
		_, err := upstream.StdioHandlers(host, k)[upstream.KindStdioOp](context.Background(),
			plane.Job{Kind: upstream.KindStdioOp, Tenant: tenant, Payload: payload, Report: func(plane.Progress) {}})
		return err
	}
	require.NoError(t, run(keys, tenant, op(3)))
	require.Equal(t, "s3cret", host.env["API_TOKEN"])

	host.env = nil
	err = run(keys, uuid.New(), op(3))
	require.True(t, fault.Is(err, fault.Unavailable), "another tenant's request: %v", err)
	err = run(keys, tenant, op(4))
	require.True(t, fault.Is(err, fault.Unavailable), "another version: %v", err)
	err = run(nil, tenant, op(3))
	require.ErrorContains(t, err, "VISOR_SECRET_KEYS")
	require.Nil(t, host.env, "the host never saw a value it should not")
}
