package audit

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Tail follows one tenant's trail as it is written, on any replica: it
// reads the store every Every and hands on the rows it has not handed on
// before. Rows carry the time their call began and are committed a little
// later, so each read looks Lookback behind the newest row seen and drops
// the rows already handed on; a row committed more than Lookback after it
// began is missed by a tail (never by the trail, lists or exports).
type Tail struct {
	Store Store
	// Every is the polling period; default 1s.
	Every time.Duration
	// Lookback is how far behind the newest row each read looks; default
	// 30s.
	Lookback time.Duration
	// Batch bounds the rows one read hands on; default 500. A burst larger
	// than that within one period is reported as skipped rather than held.
	Batch int
}

// TailBatch is what one read of a tail hands on: new rows, oldest first, and
// whether rows were skipped because more than Batch arrived at once.
type TailBatch struct {
	Entries []Entry
	Skipped bool
}

// Follow reads tenantID's rows matching f that are at or after since,
// calling emit with each read's new rows (and with an empty batch when
// nothing arrived, so the caller can keep its connection alive), until ctx
// ends or emit or the store fails; it returns that error, or nil when ctx
// ended. f's Since, Before and Limit are its own.
func (t Tail) Follow(ctx context.Context, tenantID uuid.UUID, f Filter, since time.Time, emit func(TailBatch) error) error {
	every, lookback, batch := t.Every, t.Lookback, t.Batch
	if every <= 0 {
		every = time.Second
	}
	if lookback <= 0 {
		lookback = 30 * time.Second
	}
	if batch <= 0 {
		batch = 500
	}
	seen := map[uuid.UUID]time.Time{} // rows handed on, pruned past the lookback
	newest := since
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		f.Since, f.Before, f.Limit = newest.Add(-lookback), uuid.Nil, batch
		if newest.Before(since.Add(lookback)) {
			f.Since = since
		}
		rows, err := t.Store.List(ctx, tenantID, f)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		var out TailBatch
		if len(rows) == batch { // the oldest row read is new: older new ones may be beyond it
			_, known := seen[rows[len(rows)-1].ID]
			out.Skipped = !known
		}
		for _, e := range slices.Backward(rows) { // oldest first
			if _, ok := seen[e.ID]; ok {
				continue
			}
			seen[e.ID] = e.At
			out.Entries = append(out.Entries, e)
			if e.At.After(newest) {
				newest = e.At
			}
		}
		for id, at := range seen {
			if at.Before(newest.Add(-lookback)) {
				delete(seen, id)
			}
		}
		if err := emit(out); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
