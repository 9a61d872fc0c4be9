package pg

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"math/big"
	"net/netip"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/visorhq/visor/dbsource"
)

// encodeRow turns one row's decoded values into stable JSON values; raw
// holds the values as received, for JSON columns kept as written.
func encodeRow(fds []pgconn.FieldDescription, vals []any, raw [][]byte) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		if v != nil && (fds[i].DataTypeOID == pgtype.JSONOID || fds[i].DataTypeOID == pgtype.JSONBOID) && fds[i].Format == pgtype.TextFormatCode {
			out[i] = json.RawMessage(raw[i])
			continue
		}
		out[i] = encode(fds[i].DataTypeOID, v)
	}
	return out
}

func encode(oid uint32, v any) any {
	switch x := v.(type) {
	case nil, bool, string:
		return x
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return dbsource.Int(x)
	case float32:
		return dbsource.Float(float64(x))
	case float64:
		return dbsource.Float(x)
	case []byte:
		return dbsource.Bytes(x)
	case [16]byte:
		return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16])
	case time.Time:
		switch oid {
		case pgtype.DateOID:
			return dbsource.Date(x)
		case pgtype.TimestampOID:
			return dbsource.LocalTimestamp(x)
		}
		return dbsource.Timestamp(x)
	case pgtype.Numeric:
		return numeric(x)
	case netip.Prefix:
		return x.String()
	case netip.Addr:
		return x.String()
	case *big.Int:
		return dbsource.BigInt(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = encode(0, e)
		}
		return out
	case map[string]any:
		return x
	case driver.Valuer:
		if dv, err := x.Value(); err == nil {
			return encode(oid, dv)
		}
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

// numeric encodes a decimal exactly, as a string ("12.50", "NaN").
func numeric(n pgtype.Numeric) any {
	if !n.Valid {
		return nil
	}
	v, err := n.Value()
	if err != nil {
		return nil
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}
