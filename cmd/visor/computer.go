package main

import (
	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/storage/postgres"
)

// newComputer builds computer use on Postgres. Without a browser driver
// sessions answer that no worker runs them; workspaces list and read.
func (a *app) newComputer() *computer.Service {
	store := postgres.NewComputerStore(a.db)
	return computer.NewService(store, store, nil, nil, a.log.With("area", "computer"))
}
