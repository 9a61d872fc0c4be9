package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
)

// Sweep removes kind's containers, then its networks, created more than
// olderThan ago (only worker's when worker is not empty), except those
// whose LabelID keep reports as still held (nil keeps none). It returns
// how many containers it removed; one that is already gone does not count
// and is no error.
func Sweep(ctx context.Context, cli *client.Client, kind Kind, worker string, olderThan time.Duration, keep func(id string) bool) (int, error) {
	if keep == nil {
		keep = func(string) bool { return false }
	}
	args := Filter(kind, worker)
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: args})
	if err != nil {
		return 0, fmt.Errorf("list %s containers: %w", kind, err)
	}
	cutoff := time.Now().Add(-olderThan)
	removed := 0
	var errs []error
	for _, c := range list {
		if time.Unix(c.Created, 0).After(cutoff) || keep(c.Labels[LabelID]) {
			continue
		}
		err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case err == nil:
			removed++
		case !IsGone(err):
			errs = append(errs, fmt.Errorf("remove %s: %w", c.ID, err))
		}
	}
	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: args})
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("list %s networks: %w", kind, err))...)
	}
	for _, n := range nets {
		if n.Created.After(cutoff) || keep(n.Labels[LabelID]) {
			continue
		}
		if err := cli.NetworkRemove(ctx, n.ID); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove network %s: %w", n.ID, err))
		}
	}
	return removed, errors.Join(errs...)
}

// IsGone reports an error that means the container no longer exists or is
// already being removed.
func IsGone(err error) bool {
	return cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress")
}
