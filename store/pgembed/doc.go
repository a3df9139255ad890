// Package pgembed runs a private PostgreSQL cluster from the server binaries installed on the
// machine (Debian's postgresql-<major> package: initdb and postgres under
// /usr/lib/postgresql/<major>/bin). It is what the recorder uses when no external database is
// configured, and what integration tests use when neither a DSN nor a Docker engine is available.
//
// It owns:
//   - Options.DataDir: the cluster lives in DataDir/pgdata (created with initdb on first use) and
//     the server's logs in DataDir/pgdata/log; the socket in DataDir/run when that path is short
//     enough, else in a fresh directory under os.TempDir() that Stop removes;
//   - the postgres process: started directly (no pg_ctl daemonizing) in its own process group,
//     stopped with SIGINT (fast shutdown) by Server.Stop, and on Linux sent SIGINT by the kernel if
//     the process that started it dies, so it never outlives its owner.
//
// PostgreSQL refuses to run as root. When the caller is root (as in CI and in the usual
// container), initdb and postgres run as the "postgres" system account through
// SysProcAttr.Credential; the directories pgembed creates are chowned to it, and every parent of
// DataDir must be searchable by it or Start fails and asks for another data directory. Otherwise
// they run as the calling user.
//
// Security: the cluster is created with trust authentication for Unix-socket connections
// (--auth-local=trust) and every TCP connection rejected (--auth-host=reject). Trust is acceptable
// only because the server never listens on TCP (listen_addresses is empty) and its only socket
// lives in a directory of mode 0700 owned by the server account, so the only processes that can
// connect are that account's and root's, which could read the data files anyway. pgembed must
// never listen on TCP, never put the socket in a shared directory, and never let Options.Settings
// change listen_addresses, port, the unix_socket_* settings or the hba/ident/config files; those
// are passed on the postgres command line, which outranks postgresql.conf and ALTER SYSTEM.
package pgembed
