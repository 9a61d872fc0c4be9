package main

import (
	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/storage/postgres"
)

// newBoard builds the task board service on the app's stores.
func (a *app) newBoard() *board.Service {
	dir := a.stores.identity
	return board.NewService(board.Deps{
		Store:     postgres.NewBoardStore(a.db),
		Relations: agents.NewDelegation(dir),
		Directory: dir,
		Staff:     a.ids,
		Grants:    a.grants,
		Rounds:    a.rounds,
		Logger:    a.log.With("area", "board"),
	})
}
