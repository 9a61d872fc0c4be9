package mysql

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/visorhq/visor/dbsource"
)

// encode turns one value, as the server sent it in text, into a stable
// JSON value by its column's type name.
func encode(typ string, raw []byte) any {
	if raw == nil {
		return nil
	}
	s := string(raw)
	switch typ {
	case "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "YEAR":
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			return dbsource.Int(v)
		}
	case "UNSIGNED TINYINT", "UNSIGNED SMALLINT", "UNSIGNED MEDIUMINT", "UNSIGNED INT", "UNSIGNED BIGINT":
		if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			return dbsource.Uint(v)
		}
	case "FLOAT", "DOUBLE":
		if v, err := strconv.ParseFloat(s, 64); err == nil {
			return dbsource.Float(v)
		}
	case "DATETIME":
		return strings.Replace(s, " ", "T", 1)
	case "TIMESTAMP": // the session's time zone is UTC
		return strings.Replace(s, " ", "T", 1) + "Z"
	case "BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB", "BINARY", "VARBINARY", "BIT", "GEOMETRY":
		return dbsource.Bytes(raw)
	case "JSON":
		if json.Valid(raw) {
			return json.RawMessage(append([]byte(nil), raw...))
		}
	}
	return s // DECIMAL, DATE, TIME, text: exactly as written
}
