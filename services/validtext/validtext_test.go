package validtext

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJSON(t *testing.T) {
	for body, want := range map[string]error{
		`{"a":"b"}`:                  nil,
		`{"a":"é😀"}`:                 nil,
		`{"a":"\ud83d\ude00"}`:       nil,
		`{"a":"\\u0000"}`:            nil, // a backslash, then the text u0000
		`{"a":"\"\u0041"}`:           nil,
		`{"a":"\u00"}`:               nil, // malformed: the decoder says so
		`{"a":"\u0000"}`:             ErrNUL,
		`{"\u0000":1}`:               ErrNUL,
		"{\"a\":\"\x00\"}":           ErrNUL,
		"{\"a\":\"\xff\"}":           ErrUTF8,
		"{\"a\":\"\xc3\"}":           ErrUTF8,
		`{"a":"\ud800"}`:             ErrSurrogate,
		`{"a":"\udc00"}`:             ErrSurrogate,
		`{"a":"\ud800\u0041"}`:       ErrSurrogate,
		`{"a":"\\\u0000"}`:           ErrNUL,
		`["x", {"b": ["\u0000"]}]`:   ErrNUL,
		`{"a":"x"} "\u0000"`:         ErrNUL,
		`{"a":"\ud800\udc00\u0000"}`: ErrNUL,
	} {
		require.ErrorIs(t, JSON([]byte(body)), want, body)
		if want == nil {
			require.NoError(t, JSON([]byte(body)), body)
		}
	}
}

func TestValues(t *testing.T) {
	v, err := url.ParseQuery("tool=a&x=%00")
	require.NoError(t, err)
	name, err := Values(v)
	require.Equal(t, "x", name)
	require.ErrorIs(t, err, ErrNUL)
	v, _ = url.ParseQuery("%FF=1")
	_, err = Values(v)
	require.ErrorIs(t, err, ErrUTF8)
	v, _ = url.ParseQuery("tool=create_agent&since=2024-01-01")
	_, err = Values(v)
	require.NoError(t, err)
}

// FuzzJSON: whatever JSON passes the check decodes to text Postgres
// accepts, keys and values alike.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `"\u0000"`, `"\ud800"`, `"\\u0000"`, `{"\ud83d\ude00":["x"]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if JSON(b) != nil || !json.Valid(b) {
			return
		}
		var v any
		require.NoError(t, json.Unmarshal(b, &v))
		var walk func(v any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				require.NoError(t, String(x), "%q decodes to %q", b, x)
			case []any:
				for _, e := range x {
					walk(e)
				}
			case map[string]any:
				for k, e := range x {
					walk(k)
					walk(e)
				}
			}
		}
		walk(v)
	})
}

func TestStorable(t *testing.T) {
	require.Equal(t, "ok é", Storable("ok é"))
	require.Equal(t, "a\uFFFDb", Storable("a\x00b"))
	require.Equal(t, "a\uFFFDb", Storable("a\xffb"))
	require.NoError(t, String(Storable("\x00\xc3(\xff")))
}
