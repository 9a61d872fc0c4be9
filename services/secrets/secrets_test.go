package secrets_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/secrets"
)

func keyring(t *testing.T, ids ...string) (*secrets.Keyring, []string) {
	t.Helper()
	var entries []string
	for _, id := range ids {
		e, err := secrets.NewKey(id)
		require.NoError(t, err)
		entries = append(entries, e)
	}
	k, err := secrets.ParseKeyring(strings.Join(entries, ","))
	require.NoError(t, err)
	return k, entries
}

func TestSealOpenRoundTripAndContextBinding(t *testing.T) {
	t.Parallel()
	k, _ := keyring(t, "k1")
	sealed, err := k.Seal([]byte("hunter2"), "db_source:tenant-a:1")
	require.NoError(t, err)
	require.NotContains(t, sealed, "hunter2")
	got, err := k.Open(sealed, "db_source:tenant-a:1")
	require.NoError(t, err)
	require.Equal(t, "hunter2", string(got))

	_, err = k.Open(sealed, "db_source:tenant-b:1")
	require.ErrorIs(t, err, secrets.ErrCorrupt, "a value moved to another row does not open")
	again, err := k.Seal([]byte("hunter2"), "db_source:tenant-a:1")
	require.NoError(t, err)
	require.NotEqual(t, sealed, again, "every seal uses a fresh data key and nonce")

	tampered := []byte(sealed)
	tampered[len(tampered)-2] ^= 1
	_, err = k.Open(string(tampered), "db_source:tenant-a:1")
	require.Error(t, err)
	for _, bad := range []string{"", "v1", "v2.k1.AA.AA", "v1.k1.!!.AA", "v1.k1.AA.AA"} {
		_, err := k.Open(bad, "x")
		require.ErrorIs(t, err, secrets.ErrCorrupt, bad)
	}
}

func TestParseKeyringRefusesBadEntries(t *testing.T) {
	t.Parallel()
	e, err := secrets.NewKey("a")
	require.NoError(t, err)
	for spec, want := range map[string]string{
		"":                             "holds no key",
		"nokey":                        "entry 1",
		"a:short":                      "key \"a\"",
		"bad id:" + e[2:]:              "entry 1",
		e + "," + e:                    "appears twice",
		"a:" + strings.Repeat("A", 32): "32 bytes",
	} {
		_, err := secrets.ParseKeyring(spec)
		require.ErrorContains(t, err, want, spec)
		require.NotContains(t, err.Error(), e[2:], "an error never echoes a key")
	}
	k, err := secrets.ParseKeyring(" " + e + " ,")
	require.NoError(t, err)
	require.Equal(t, "a", k.Primary())
}

// memHolder is a Holder over a map, as a store would keep sealed values.
type memHolder map[string]string

func (m memHolder) RewrapAll(_ context.Context, rewrap func(string) (string, bool, error)) (int, error) {
	n := 0
	for id, v := range m {
		nv, changed, err := rewrap(v)
		if err != nil {
			return n, err
		}
		if changed {
			m[id], n = nv, n+1
		}
	}
	return n, nil
}

// TestRotation follows docs/secrets.md: add a new first key, rotate, then
// remove the old key; every value still opens, and only then.
func TestRotation(t *testing.T) {
	t.Parallel()
	old, oldEntries := keyring(t, "old")
	h := memHolder{}
	for _, id := range []string{"1", "2", "3"} {
		v, err := old.Seal([]byte("pw"+id), "row:"+id)
		require.NoError(t, err)
		h[id] = v
	}
	newEntry, err := secrets.NewKey("new")
	require.NoError(t, err)
	both, err := secrets.ParseKeyring(newEntry + "," + oldEntries[0])
	require.NoError(t, err)
	require.Equal(t, []string{"new", "old"}, both.IDs())

	onlyNew, err := secrets.ParseKeyring(newEntry)
	require.NoError(t, err)
	_, err = onlyNew.Open(h["1"], "row:1")
	require.ErrorIs(t, err, secrets.ErrUnknownKey, "removing the old key before rotating loses the values")

	n, err := secrets.Rotate(context.Background(), both, h)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, err = secrets.Rotate(context.Background(), both, h)
	require.NoError(t, err)
	require.Zero(t, n, "a second rotation changes nothing")
	for id, v := range h {
		kid, err := secrets.KeyID(v)
		require.NoError(t, err)
		require.Equal(t, "new", kid)
		got, err := onlyNew.Open(v, "row:"+id)
		require.NoError(t, err, "after rotation the old key can go")
		require.Equal(t, "pw"+id, string(got))
	}
}

func TestRotateStopsAtAValueItCannotOpen(t *testing.T) {
	t.Parallel()
	k, _ := keyring(t, "a")
	other, _ := keyring(t, "b")
	v, err := other.Seal([]byte("x"), "c")
	require.NoError(t, err)
	_, err = secrets.Rotate(context.Background(), k, memHolder{"1": v})
	require.ErrorIs(t, err, secrets.ErrUnknownKey)
}
