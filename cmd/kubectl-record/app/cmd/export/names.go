package export

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdutil"
	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

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
		return "", fmt.Errorf("no file name for an object without a resource and a name (%s)", format.Cell(o.Name))
	}
	base := o.Resource
	if o.APIGroup != "" {
		base += "." + o.APIGroup
	}
	name := cmdutil.FileSafe(base + "_" + o.Name + ".yaml")
	if len(name) > maxFileName {
		// A valid name (253 characters, more once percent-encoded) is
		// longer than a file name may be: its start, and its uid.
		uid := "." + cmdutil.FileSafe(o.UID) + ".yaml"
		cut := maxFileName - len(uid)
		for cut > 0 && (!utf8.RuneStart(name[cut]) || strings.LastIndexByte(name[max(0, cut-2):cut], '%') >= 0) {
			cut--
		}
		name = name[:cut] + uid
	}
	return name, nil
}

// claim returns the file name of the object uid named name in this export:
// names that differ in case only are one file on a case-insensitive file
// system (macOS, Windows), so the second gets its uid, wherever the export
// runs.
func (e *options) claim(name, uid string) string {
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
	return strings.TrimSuffix(name, ".yaml") + "." + cmdutil.FileSafe(uid[:min(8, len(uid))]) + ".yaml"
}
