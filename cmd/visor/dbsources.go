package main

import (
	"github.com/visorhq/visor/dbsource"
	"github.com/visorhq/visor/dbsource/mysql"
	"github.com/visorhq/visor/dbsource/pg"
	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/secrets"
	"github.com/visorhq/visor/storage/postgres"
)

// SecretsConfig is the key-encryption keyring and the database network
// allow list.
type SecretsConfig struct {
	// Keys seal stored secrets; nil when VISOR_SECRET_KEYS is unset (no
	// secret can then be stored).
	Keys *secrets.Keyring
	// DBAllow lists the private networks and hosts database sources may
	// reach.
	DBAllow dbsource.Allow
}

func loadSecretsConfig(get func(string) string, bad func(name, format string, args ...any)) SecretsConfig {
	var c SecretsConfig
	if spec := get("VISOR_SECRET_KEYS"); spec != "" {
		k, err := secrets.ParseKeyring(spec)
		if err != nil {
			bad("VISOR_SECRET_KEYS", "%v; want comma-separated id:base64-32-bytes, the first encrypting (docs/secrets.md)", err)
		}
		c.Keys = k
	}
	allow, err := dbsource.ParseAllow(get("VISOR_DB_ALLOWED_NETWORKS"))
	if err != nil {
		bad("VISOR_DB_ALLOWED_NETWORKS", "%v; want comma-separated CIDRs and host names, e.g. 10.20.0.0/16,db.internal", err)
	}
	c.DBAllow = allow
	return c
}

// newDBSources builds the database sources service with its drivers; the
// drivers' pools close with the app.
func (a *app) newDBSources() *dbsources.Service {
	pgd, myd := pg.New(a.cfg.Secrets.DBAllow), mysql.New(a.cfg.Secrets.DBAllow)
	a.life.Defer(pgd.Close)
	a.life.Defer(myd.Close)
	a.stores.dbSources = postgres.NewDBSourceStore(a.db)
	return dbsources.NewService(a.stores.dbSources, a.cfg.Secrets.Keys,
		map[dbsources.Kind]dbsources.Driver{dbsources.Postgres: pgd, dbsources.MySQL: myd}, a.publisher(), a.log.With("area", "dbsources"))
}
