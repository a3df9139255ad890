package model

import "errors"

// IsInvalidData reports whether err is PostgreSQL refusing the data itself,
// so that writing the same rows again cannot succeed: a data exception
// (SQLSTATE class 22, e.g. a NUL character in text), a program limit
// (class 54, e.g. a value too long for an index entry) or an integrity
// violation (class 23) other than a unique violation (23505, a batch
// redelivered concurrently with itself, which a retry resolves). Anything
// else, including an error that is not PostgreSQL's (a refused
// connection, a timeout), is not. It reads the SQLSTATE of any error in
// err's chain that has one (pgconn.PgError), so that writers' users need
// not know the driver.
func IsInvalidData(err error) bool {
	var pe interface{ SQLState() string }
	if !errors.As(err, &pe) {
		return false
	}
	code := pe.SQLState()
	if len(code) != 5 {
		return false
	}
	switch code[:2] {
	case "22", "54":
		return true
	case "23":
		return code != "23505"
	}
	return false
}
