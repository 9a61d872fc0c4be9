package secrets

import (
	"context"
	"fmt"
)

// Holder is a store that keeps sealed values. RewrapAll calls rewrap on
// every value it holds, in one transaction per store or in batches as it
// sees fit, and saves each value rewrap changed; it returns how many it
// saved. An error from rewrap must stop it and leave that value as it was.
type Holder interface {
	RewrapAll(ctx context.Context, rewrap func(sealed string) (string, bool, error)) (int, error)
}

// Rotate re-wraps every value the holders keep under the keyring's primary
// key, returning how many changed. Run it after adding a new first key and
// before removing the old one (docs/secrets.md). Running it twice changes
// nothing the second time.
func Rotate(ctx context.Context, k *Keyring, holders ...Holder) (int, error) {
	total := 0
	for _, h := range holders {
		n, err := h.RewrapAll(ctx, k.Rewrap)
		total += n
		if err != nil {
			return total, fmt.Errorf("re-wrap: %w", err)
		}
	}
	return total, nil
}
