//go:build !unix

package ui

import "io/fs"

// privateBase checks nothing more where the file system has no Unix owner
// and mode (the temporary directory is the user's own on Windows).
func privateBase(string, fs.FileInfo) error { return nil }

// mine is true where files have no Unix owner.
func mine(fs.FileInfo) bool { return true }
