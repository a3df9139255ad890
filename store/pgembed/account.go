package pgembed

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// serverAccountName is the account initdb and postgres run as when the caller is root.
const serverAccountName = "postgres"

// account is the OS account the server runs as; it is also the database superuser's name.
type account struct {
	name   string
	uid    uint32
	gid    uint32
	groups []uint32
	home   string
	cred   *syscall.Credential // nil: run as the calling user
}

// serverAccount returns the calling user, or the postgres account when the caller is root.
func serverAccount() (account, error) {
	if os.Geteuid() != 0 {
		a := account{uid: uint32(os.Geteuid()), gid: uint32(os.Getegid()), home: os.Getenv("HOME")}
		if u, err := user.Current(); err == nil {
			a.name, a.home = u.Username, u.HomeDir
		} else if a.name = os.Getenv("USER"); a.name == "" {
			return account{}, fmt.Errorf("pgembed: cannot name the current user (uid %d): %w", a.uid, err)
		}
		return a, nil
	}
	u, err := user.Lookup(serverAccountName)
	if err != nil {
		return account{}, fmt.Errorf("pgembed: running as root, which PostgreSQL refuses; it runs the server as the %q account, which cannot be found: %w", serverAccountName, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return account{}, fmt.Errorf("pgembed: account %q has non-numeric uid/gid %s/%s", u.Username, u.Uid, u.Gid)
	}
	if uid == 0 {
		return account{}, fmt.Errorf("pgembed: account %q has uid 0, and PostgreSQL refuses to run as root", u.Username)
	}
	a := account{name: u.Username, uid: uint32(uid), gid: uint32(gid), home: u.HomeDir}
	gids, _ := u.GroupIds()
	for _, g := range gids {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			a.groups = append(a.groups, uint32(n))
		}
	}
	a.cred = &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: a.groups}
	return a, nil
}

// own makes a directory pgembed created belong to the account.
func (a account) own(dir string) error {
	if a.cred == nil {
		return nil
	}
	if err := os.Chown(dir, int(a.uid), int(a.gid)); err != nil {
		return fmt.Errorf("pgembed: chown %s to %s: %w", dir, a.name, err)
	}
	return nil
}

// mkdirOwned creates dir (mode 0700, owned by the account) unless it exists.
func (a account) mkdirOwned(dir string) error {
	err := os.Mkdir(dir, 0o700)
	if os.IsExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgembed: %w", err)
	}
	return a.own(dir)
}

// checkReachable fails unless the account can search dir and every directory above it. Only
// needed when the server runs as another account than the caller.
func (a account) checkReachable(dir string) error {
	if a.cred == nil {
		return nil
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("pgembed: %w", err)
	}
	for p := real; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("pgembed: %w", err)
		}
		if !a.canSearch(fi) {
			return fmt.Errorf("pgembed: %s: the %q account, which runs PostgreSQL because it refuses to run as root, cannot enter %s (mode %#o); choose another --data-dir, or make %s searchable (chmod o+x)",
				dir, a.name, p, fi.Mode().Perm(), p)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

func (a account) canSearch(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true // cannot tell; let the server report it
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == a.uid:
		return perm&0o100 != 0
	case st.Gid == a.gid || slices.Contains(a.groups, st.Gid):
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

// env is the environment initdb and postgres run with: the caller's, minus libpq/server
// variables that could redirect them, with the account's HOME and the C locale for messages.
func (a account) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "PG") || slices.Contains([]string{"HOME", "USER", "LOGNAME", "LC_ALL"}, name) {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+a.home, "USER="+a.name, "LOGNAME="+a.name, "LC_ALL=C")
}
