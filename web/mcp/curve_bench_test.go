package mcp

import (
	"fmt"
	"testing"
)

// BenchmarkListCatalogSize is the cost curve of tools/list against the size
// of the catalog: 6, 96 and 996 tools (the catalog's own four, the two
// bench tools and synthetic ones), one page of up to 1,000 tools, the full endpoint with an agent key, 2026-07-28, one
// client (latency) and eight (throughput), all answered from the cache.
//
//	go test ./web/mcp -run '^$' -bench ListCatalogSize -benchtime 300x
func BenchmarkListCatalogSize(b *testing.B) {
	for _, extra := range []int{0, 90, 990} {
		url, token, _, reg := fullStackWith(b, extra, Options{PageSize: 1000})
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`
		for _, workers := range []int{1, 8} {
			b.Run(fmt.Sprintf("tools=%d/c%d", len(reg.All()), workers), func(b *testing.B) {
				loadWith(b, workers, url, token, modernHeaders("tools/list", ""), body)
			})
		}
	}
}
