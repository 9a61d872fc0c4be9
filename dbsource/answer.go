package dbsource

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/visorhq/visor/services/dbsources"
)

// Builder collects an answer's rows under its caps.
type Builder struct {
	lim   dbsources.Limits
	a     dbsources.Answer
	bytes int
}

// NewBuilder starts an answer with cols under lim's row and byte caps.
func NewBuilder(cols []dbsources.Column, lim dbsources.Limits) *Builder {
	return &Builder{lim: lim, a: dbsources.Answer{Columns: cols, Rows: [][]any{}}}
}

// Add appends row (values already encoded by Value) and reports whether
// the caller should read another: false once a cap cut the answer.
func (b *Builder) Add(row []any) bool {
	if len(b.a.Rows) >= b.lim.MaxRows {
		b.a.Truncated, b.a.Cap = true, dbsources.CapRows
		return false
	}
	enc, _ := json.Marshal(row)
	if b.bytes+len(enc) > b.lim.MaxBytes {
		b.a.Truncated, b.a.Cap = true, dbsources.CapBytes
		return false
	}
	b.bytes += len(enc)
	b.a.Rows = append(b.a.Rows, row)
	return true
}

// Answer returns the answer built.
func (b *Builder) Answer() dbsources.Answer { return b.a }

// maxSafeInt is the largest integer a JSON reader keeps exactly.
const maxSafeInt = 1 << 53

// Int encodes an integer: a number when JSON readers keep it exactly, a
// decimal string beyond ±2^53.
func Int(v int64) any {
	if v > maxSafeInt || v < -maxSafeInt {
		return strconv.FormatInt(v, 10)
	}
	return v
}

// Uint encodes an unsigned integer like Int.
func Uint(v uint64) any {
	if v > maxSafeInt {
		return strconv.FormatUint(v, 10)
	}
	return int64(v)
}

// Float encodes a float: a number, or "NaN", "Infinity", "-Infinity".
func Float(v float64) any {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	return v
}

// BigInt encodes an arbitrary integer like Int.
func BigInt(v *big.Int) any {
	if v.IsInt64() {
		return Int(v.Int64())
	}
	return v.String()
}

// Bytes encodes binary data as standard base64.
func Bytes(v []byte) any { return base64.StdEncoding.EncodeToString(v) }

// Date encodes a calendar date as YYYY-MM-DD.
func Date(t time.Time) any { return t.Format(time.DateOnly) }

// Timestamp encodes an instant as RFC 3339 in UTC with microseconds when
// it has them.
func Timestamp(t time.Time) any { return t.UTC().Format("2006-01-02T15:04:05.999999Z07:00") }

// LocalTimestamp encodes a time without a zone, as written: no offset.
func LocalTimestamp(t time.Time) any { return t.Format("2006-01-02T15:04:05.999999") }
