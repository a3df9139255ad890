// Command witnessconfig adds a log and its verifier key to a litewitness
// database, as witnessctl add-log and add-key do (witnessctl itself needs a
// module the Go module proxy here does not serve).
//
//	witnessconfig -db litewitness.db -origin ORIGIN -key VKEY
package main

import (
	"encoding/base64"
	"flag"
	"log"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

func main() {
	db := flag.String("db", "litewitness.db", "path to the litewitness database")
	origin := flag.String("origin", "", "the log's origin line")
	vkey := flag.String("key", "", "the log's note verifier key")
	flag.Parse()
	if _, err := note.NewVerifier(*vkey); err != nil || *origin == "" {
		log.Fatalf("witnessconfig: want -origin and a verifier -key: %v", err)
	}
	conn, err := sqlite.OpenConn(*db, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	// litewitness's schema (internal/witness.OpenDB), created the same way.
	err = sqlitex.ExecScript(conn, `
		PRAGMA strict_types = ON;
		PRAGMA foreign_keys = ON;
		CREATE TABLE IF NOT EXISTS log (origin TEXT PRIMARY KEY, tree_size INTEGER NOT NULL, tree_hash TEXT NOT NULL);
		CREATE TABLE IF NOT EXISTS key (origin TEXT NOT NULL, key TEXT NOT NULL, FOREIGN KEY(origin) REFERENCES log(origin));`)
	if err != nil {
		log.Fatal(err)
	}
	empty, _ := tlog.TreeHash(0, nil)
	if err := sqlitex.Execute(conn, "INSERT INTO log (origin, tree_size, tree_hash) VALUES (?, 0, ?)",
		&sqlitex.ExecOptions{Args: []any{*origin, base64.StdEncoding.EncodeToString(empty[:])}}); err != nil {
		log.Fatal(err)
	}
	if err := sqlitex.Execute(conn, "INSERT INTO key (origin, key) VALUES (?, ?)",
		&sqlitex.ExecOptions{Args: []any{*origin, *vkey}}); err != nil {
		log.Fatal(err)
	}
}
