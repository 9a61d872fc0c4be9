package knowledge

import (
	"encoding/json"
	"time"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/tools"
)

func str(args map[string]any, name string) string {
	v, _ := tools.String(args, name)
	return v
}

// strs reads an array-of-strings argument; absent is nil.
func strs(args map[string]any, name string) ([]string, error) {
	raw, ok := args[name].([]any)
	if !ok {
		return nil, nil
	}
	out := make([]string, 0, len(raw))
	for _, x := range raw {
		s, ok := x.(string)
		if !ok {
			return nil, fault.New(fault.Invalid, "%s must be an array of strings", name)
		}
		out = append(out, s)
	}
	return out, nil
}

func num(args map[string]any, name string) (float64, error) {
	switch v := args[name].(type) {
	case json.Number:
		f, err := v.Float64()
		if err == nil {
			return f, nil
		}
	case float64:
		return v, nil
	}
	return 0, fault.New(fault.Invalid, "%s must be a number", name)
}

func when(args map[string]any, name string) (time.Time, error) {
	v := str(args, name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fault.New(fault.Invalid, "%s must be an RFC 3339 time", name)
	}
	return t, nil
}

func intArg(args map[string]any, name string) int {
	n, _ := tools.Int(args, name)
	return int(n)
}
