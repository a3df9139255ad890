package history

import (
	"errors"

	"github.com/options-record/options-record/store"
)

// MaxScanRows bounds the rows one page request reads from the record.
const MaxScanRows = 5000

// pageScan reads a list page by page from the record, in chunks.
type pageScan[R any, T any] struct {
	limit int // items of the page
	// fetch reads up to n rows after the cursor (nil: from the start).
	fetch func(after *store.Cursor, n int) ([]R, error)
	gr    func(*R) (string, string, string)
	// name, when set, is the row's object name: a row the caller may not
	// get by its resource and namespace is checked by name too. Set for
	// the lists of one object, whose caller was authorized by its name.
	name func(*R) string
	conv func(*R) T
	cur  func(*R) store.Cursor
	// redact, when set, leaves out of a row the caller may read what it
	// may not (who started a cascade), before conv.
	redact func(*R, *ReadFilter) error
}

// run fills a page with the rows the caller may read. The paging rule,
// chosen so that a page tells nothing of the rows the caller may not read:
//
//   - the record is scanned from the cursor in chunks, at most MaxScanRows
//     rows and MaxChecks authorization questions per request;
//   - a page holds up to limit items the caller may read;
//   - next is given only when the scan found, within those bounds, one
//     more item the caller may read after the page, and it points at the
//     page's last item (a row the caller has seen), never at a hidden row.
//
// So an empty page never has a next cursor, and the presence of next and
// the cursor's position depend only on the rows the caller may read. A scan
// that reaches its bounds ends the list as the end of the record would:
// items beyond that many hidden rows are found by narrowing the request
// (namespace, resource, since/until), not by paging.
func (p pageScan[R, T]) run(after *store.Cursor, f *ReadFilter) (Page[T], error) {
	page := Page[T]{Items: []T{}}
	chunk := max(p.limit+1, 100)
	var last store.Cursor
	for scanned := 0; scanned < MaxScanRows; {
		n := min(chunk, MaxScanRows-scanned)
		rows, err := p.fetch(after, n)
		if err != nil {
			return page, err
		}
		scanned += len(rows)
		for i := range rows {
			g, res, ns := p.gr(&rows[i])
			var ok bool
			if p.name != nil {
				ok, err = f.AllowedNamed(g, res, ns, p.name(&rows[i]))
			} else {
				ok, err = f.Allowed(g, res, ns)
			}
			if errors.Is(err, errTooManyChecks) {
				return page, nil // the scan's bound: the list ends here
			}
			if err != nil {
				return page, err
			}
			if !ok {
				continue
			}
			if len(page.Items) == p.limit {
				page.Next = f.s.encodeCursor(last)
				return page, nil
			}
			if p.redact != nil {
				if err := p.redact(&rows[i], f); err != nil {
					return page, err
				}
			}
			page.Items = append(page.Items, p.conv(&rows[i]))
			last = p.cur(&rows[i])
		}
		if len(rows) < n {
			return page, nil // the end of the record
		}
		c := p.cur(&rows[len(rows)-1])
		after = &c
	}
	return page, nil
}
