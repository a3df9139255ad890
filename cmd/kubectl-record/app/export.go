package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/options-record/options-record/api/escape"
	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/restore/manifest"
)

type exportOptions struct {
	*options
	asOf      string
	dir       string
	resources []string
	written   map[string]bool // the file names written, case-folded
	root      *os.Root        // DIR, opened once checked
}

func newExportCommand(o *options) *cobra.Command {
	e := &exportOptions{options: o}
	cmd := &cobra.Command{
		Use:   "export -n NAMESPACE -o DIR",
		Short: "Write the namespace as it was at a time: one clean manifest per object",
		Long: `Write every recorded object of the namespace as it was at a time (default:
now) into DIR, one clean YAML manifest per object (status, uid,
resourceVersion, managedFields... removed; ownerReferences to owners that are
gone dropped), that kubectl apply -f DIR accepts: the file backup operators
know, served from the record. Only objects you may read are written; objects
whose state the record cannot restore (Secret values recorded as digests, no
full state) are listed and skipped. DIR is created if needed (0700), and
refused when it is a symbolic link (with or without a trailing slash), another
user's, or writable by others, or when a link on the way to it is neither yours
nor root's;
files are written 0600 (Secrets may be recorded in clear) and never over an
existing file. An object whose file cannot be written is listed and skipped,
and the export then exits 1.`,
		Example: `  kubectl record export -n shop -o shop-now/
  kubectl record export -n shop --as-of 2026-11-25T09:00:00Z -o shop-before-the-outage/
  kubectl apply --dry-run=server -f shop-before-the-outage/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return e.run(cmd.Context()) },
	}
	cmd.Flags().StringVar(&e.asOf, "as-of", "", "The time (RFC 3339, or 2h for two hours ago); default: now")
	cmd.Flags().StringVarP(&e.dir, "output", "o", "", "The directory to write into (required)")
	cmd.Flags().StringSliceVar(&e.resources, "resources", nil, "Only these types (cm, deployments.apps...), comma-separated")
	return cmd
}

func (e *exportOptions) run(ctx context.Context) error {
	if e.dir == "" {
		return usageError{errors.New("-o DIR is required: the directory to write the manifests into")}
	}
	at := now()
	if e.asOf != "" {
		var err error
		if at, err = parseTime(e.asOf); err != nil {
			return err
		}
	}
	ns, err := e.namespace()
	if err != nil {
		return err
	}
	var only []*target
	for _, r := range e.resources {
		gr, namespaced, err := e.resolve(r)
		if err != nil {
			return err
		}
		if !namespaced {
			return usageError{fmt.Errorf("%s is cluster-scoped: export writes a namespace's objects", gr)}
		}
		only = append(only, &target{resource: gr, namespaced: true})
	}
	if len(only) == 0 {
		only = []*target{nil}
	}
	rc, err := e.record()
	if err != nil {
		return err
	}
	if e.root, err = openPrivateDir(e.dir); err != nil {
		return err
	}
	defer e.root.Close()
	var written, skipped, failed int
	for _, t := range only {
		opts := metav1.ListOptions{FieldSelector: t.selector(field("asOf", at.UTC().Format(time.RFC3339Nano))), Limit: 100}
		for {
			page, err := rc.Changes(ns).List(ctx, opts)
			if err != nil {
				return explain(err, "list the objects of namespace "+ns+" as of "+at.UTC().Format(time.RFC3339))
			}
			for _, c := range page.Items {
				file, err := e.write(ctx, ns, &c)
				var fe *fileError
				switch {
				case errors.As(err, &fe):
					fmt.Fprintf(e.streams.ErrOut, "not written %s: %s\n", fe.what, cell(fe.Error()))
					failed++
					continue
				case err != nil:
					return err
				}
				if file == "" {
					skipped++
					continue
				}
				written++
			}
			if page.Continue == "" {
				break
			}
			opts.Continue = page.Continue
		}
	}
	fmt.Fprintf(e.streams.Out, "Exported %d objects of namespace %s as of %s into %s", written, cell(ns), at.UTC().Format(time.RFC3339), cell(e.dir))
	if skipped > 0 {
		fmt.Fprintf(e.streams.Out, " (%d skipped: see above)", skipped)
	}
	fmt.Fprintln(e.streams.Out)
	if failed > 0 {
		return fmt.Errorf("%d objects could not be written into %s: see above", failed, cell(e.dir))
	}
	return nil
}

// fileError is an object whose file could not be written: it is listed,
// the export goes on, and exits 1 at its end.
type fileError struct {
	what string
	err  error
}

func (e *fileError) Error() string { return e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

// openPrivateDir creates dir (0700) or takes an existing one that is a
// real directory (not a symbolic link), this user's, and not writable by
// group or others: the manifests may hold Secrets in clear. The path is
// cleaned first (Lstat("link/") and Lstat("link/.") follow the link) and
// walked one directory at a time, each opened as an os.Root and checked
// to be the directory looked at, so nothing can be swapped in between;
// every symbolic link on the way must be this user's or root's (a link
// another user planted in /tmp, to a directory of the victim's, leads
// nowhere). DIR is made in the directory reached, and files are opened
// through the returned Root, which no link can lead out of.
func openPrivateDir(dir string) (*os.Root, error) {
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
		return nil, fmt.Errorf("%s is not a directory (a symbolic link is refused: give the directory itself)", cell(given))
	}
	root, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	opened, err := root.Stat(".")
	if err == nil && !os.SameFile(fi, opened) {
		err = fmt.Errorf("%s changed while it was opened", cell(given))
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
				err = fmt.Errorf("%s: too many levels of symbolic links", cell(at))
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
			return nil, fmt.Errorf("%s is not a directory", cell(at))
		}
		next, err := cur.OpenRoot(part)
		if err == nil {
			var opened fs.FileInfo
			if opened, err = next.Stat("."); err == nil && !os.SameFile(fi, opened) {
				err = fmt.Errorf("%s changed while it was opened", cell(at))
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

// write writes one object's manifest as of its version; "" when skipped.
func (e *exportOptions) write(ctx context.Context, ns string, c *record.Change) (string, error) {
	what := resourceCell(c.Object) + "/" + cell(c.Object.Name)
	if !c.Restorable {
		fmt.Fprintf(e.streams.ErrOut, "skipped %s: the record holds no restorable state of it (Secret values as digests, or no full state)\n", what)
		return "", nil
	}
	rc, err := e.record()
	if err != nil {
		return "", err
	}
	full, err := rc.Changes(ns).Get(ctx, c.Name, metav1.GetOptions{})
	if err != nil {
		return "", explain(err, "get version "+c.Name+" in namespace "+ns)
	}
	if full.Manifest == nil || len(full.Manifest.Raw) == 0 {
		fmt.Fprintf(e.streams.ErrOut, "skipped %s: no manifest\n", what)
		return "", nil
	}
	var obj map[string]any
	if err := json.Unmarshal(full.Manifest.Raw, &obj); err != nil {
		return "", fmt.Errorf("%s: the manifest is not an object: %w", what, err)
	}
	if err := manifest.CheckSingleObject(obj, manifest.Identity{Group: full.Object.APIGroup, Kind: full.Object.Kind,
		Namespace: full.Object.Namespace, Name: full.Object.Name}); err != nil {
		fmt.Fprintf(e.streams.ErrOut, "skipped %s: %s\n", what, cell(err.Error()))
		return "", nil
	}
	name, err := manifestFile(full.Object)
	if err != nil {
		fmt.Fprintf(e.streams.ErrOut, "skipped %s: %s\n", what, cell(err.Error()))
		return "", nil
	}
	y, err := manifest.JSONToYAML(full.Manifest.Raw)
	if err != nil {
		return "", err
	}
	file := e.claim(name, full.Object.UID)
	// O_EXCL: never over a file, never through a link.
	f, err := e.root.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return "", &fileError{what, fmt.Errorf("%s exists: export never overwrites a file (use an empty directory)", file)}
	}
	if err != nil {
		return "", &fileError{what, err}
	}
	_, err = f.Write(y)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = e.root.Remove(file)
		return "", &fileError{what, err}
	}
	return filepath.Join(e.dir, file), nil
}

// maxFileName is the longest file name, in bytes, that every file system
// the plugin runs on takes (ext4, APFS, NTFS: 255).
const maxFileName = 255

// manifestFile names an object's file: resource[.group]_name.yaml. The
// names were written by cluster users (a Role's name may hold almost
// anything): a character that could leave the directory, or that a
// terminal or a file browser would not show as itself (controls,
// direction overrides, invisible characters), is percent-encoded, as is %.
func manifestFile(o record.ObjectReference) (string, error) {
	if o.Resource == "" || o.Name == "" {
		return "", fmt.Errorf("no file name for an object without a resource and a name (%s)", cell(o.Name))
	}
	base := o.Resource
	if o.APIGroup != "" {
		base += "." + o.APIGroup
	}
	name := fileSafe(base + "_" + o.Name + ".yaml")
	if len(name) > maxFileName {
		// A valid name (253 characters, more once percent-encoded) is
		// longer than a file name may be: its start, and its uid.
		uid := "." + fileSafe(o.UID) + ".yaml"
		cut := maxFileName - len(uid)
		for cut > 0 && (!utf8.RuneStart(name[cut]) || strings.LastIndexByte(name[max(0, cut-2):cut], '%') >= 0) {
			cut--
		}
		name = name[:cut] + uid
	}
	return name, nil
}

// fileSafe percent-encodes the characters of name that are not safe in
// one file name shown to a person: the path separators, %, invalid bytes
// and what escape.Hidden hides.
func fileSafe(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r == utf8.RuneError || r == '/' || r == '\\' || r == '%' || escape.Hidden(r) {
			var buf [utf8.UTFMax]byte
			for _, c := range buf[:utf8.EncodeRune(buf[:], r)] {
				fmt.Fprintf(&b, "%%%02X", c)
			}
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// claim returns the file name of the object uid named name in this export:
// names that differ in case only are one file on a case-insensitive file
// system (macOS, Windows), so the second gets its uid, wherever the export
// runs.
func (e *exportOptions) claim(name, uid string) string {
	if e.written == nil {
		e.written = map[string]bool{}
	}
	// One file to a case-insensitive file system that also equates
	// Unicode normalization forms (macOS's APFS): full case folding
	// ("STRASSE" and "straße" are one), on the normalized name.
	fold := func(s string) string { return norm.NFC.String(cases.Fold().String(norm.NFC.String(s))) }
	if e.written[fold(name)] {
		first := uniqueFile(name, uid)
		name = first
		for n := 2; e.written[fold(name)]; n++ { // a real object may be named like a twin
			name = strings.TrimSuffix(first, ".yaml") + "." + strconv.Itoa(n) + ".yaml"
		}
	}
	e.written[fold(name)] = true
	return name
}

// uniqueFile is the name of a second object whose file name is taken (on a
// case-insensitive file system, Role "Edit" beside Role "edit"): its uid
// makes it distinct.
func uniqueFile(name, uid string) string {
	return strings.TrimSuffix(name, ".yaml") + "." + fileSafe(uid[:min(8, len(uid))]) + ".yaml"
}
