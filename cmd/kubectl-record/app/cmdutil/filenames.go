package cmdutil

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/options-record/options-record/api/escape"
)

// MaxFileName is the longest file name, in bytes, that every file system
// the plugin runs on takes (ext4, APFS, NTFS: 255).
const MaxFileName = 255

// FileSafe percent-encodes the characters of name that are not safe in
// one file name shown to a person: the path separators, %, invalid bytes
// and what escape.Hidden hides.
func FileSafe(name string) string {
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

// CutFileName cuts name (FileSafe's) to at most n bytes, never inside a
// character or a percent-escape.
func CutFileName(name string, n int) string {
	if len(name) <= n {
		return name
	}
	cut := max(n, 0)
	for cut > 0 && (!utf8.RuneStart(name[cut]) || strings.LastIndexByte(name[max(0, cut-2):cut], '%') >= 0) {
		cut--
	}
	return name[:cut]
}
