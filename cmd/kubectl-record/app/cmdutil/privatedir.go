package cmdutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

// OpenPrivateDir creates dir (0700) or takes an existing one that is a
// real directory (not a symbolic link), this user's, and not writable by
// group or others: the manifests may hold Secrets in clear. The path is
// cleaned first (Lstat("link/") and Lstat("link/.") follow the link) and
// walked one directory at a time, each opened as an os.Root and checked
// to be the directory looked at, so nothing can be swapped in between;
// every symbolic link on the way must be this user's or root's (a link
// another user planted in /tmp, to a directory of the victim's, leads
// nowhere). DIR is made in the directory reached, and files are opened
// through the returned Root, which no link can lead out of.
func OpenPrivateDir(dir string) (*os.Root, error) {
	given := dir
	dir, err := filepath.Abs(dir) // cleaned
	if err != nil {
		return nil, err
	}
	parent, err := walkDir(filepath.Dir(dir))
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	name := filepath.Base(dir)
	if name == string(filepath.Separator) || filepath.Dir(dir) == dir {
		name = "." // the root directory itself
	}
	if err := parent.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	fi, err := parent.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory (a symbolic link is refused: give the directory itself)", format.Cell(given))
	}
	root, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	opened, err := root.Stat(".")
	if err == nil && !os.SameFile(fi, opened) {
		err = fmt.Errorf("%s changed while it was opened", format.Cell(given))
	}
	if err == nil {
		err = privateDir(given, opened)
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	return root, nil
}

// maxLinks is how many symbolic links a walk follows (Linux's limit).
const maxLinks = 40

// walkDir opens the directory at path (absolute, clean) one component at
// a time from the file system's root: each directory is opened as an
// os.Root beneath the last and checked to be the one looked at; a
// symbolic link is followed only when it is this user's or root's.
func walkDir(path string) (*os.Root, error) {
	vol := filepath.VolumeName(path)
	top := vol + string(filepath.Separator)
	cur, err := os.OpenRoot(top)
	if err != nil {
		return nil, err
	}
	var up []*os.Root // the directories above cur, for ".." in a link
	closeAll := func() {
		cur.Close()
		for _, r := range up {
			r.Close()
		}
	}
	split := func(p string) []string { return strings.Split(filepath.ToSlash(p), "/") }
	todo, seen, links := split(path[len(vol):]), top, 0
	for len(todo) > 0 {
		part := todo[0]
		todo = todo[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			if len(up) > 0 {
				cur.Close()
				cur, up = up[len(up)-1], up[:len(up)-1]
			}
			seen = filepath.Dir(seen)
			continue
		}
		at := filepath.Join(seen, part)
		fi, err := cur.Lstat(part)
		if err != nil {
			closeAll()
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if err := trustedLink(at, fi); err != nil {
				closeAll()
				return nil, err
			}
			target, err := cur.Readlink(part)
			if links++; err == nil && links > maxLinks {
				err = fmt.Errorf("%s: too many levels of symbolic links", format.Cell(at))
			}
			if err != nil {
				closeAll()
				return nil, err
			}
			if t := filepath.VolumeName(target) + string(filepath.Separator); filepath.IsAbs(target) {
				next, err := os.OpenRoot(t)
				if err != nil {
					closeAll()
					return nil, err
				}
				closeAll()
				cur, up, seen, target = next, nil, t, target[len(t)-1:]
			}
			todo = append(split(target), todo...)
			continue
		}
		if !fi.IsDir() {
			closeAll()
			return nil, fmt.Errorf("%s is not a directory", format.Cell(at))
		}
		next, err := cur.OpenRoot(part)
		if err == nil {
			var opened fs.FileInfo
			if opened, err = next.Stat("."); err == nil && !os.SameFile(fi, opened) {
				err = fmt.Errorf("%s changed while it was opened", format.Cell(at))
			}
			if err != nil {
				next.Close()
			}
		}
		if err != nil {
			closeAll()
			return nil, err
		}
		up, cur, seen = append(up, cur), next, at
	}
	for _, r := range up {
		r.Close()
	}
	return cur, nil
}
