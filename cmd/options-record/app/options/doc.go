// Package options owns the flags of each options-record command: one type
// per command (Serve, Import, SQL, Policy) that defines its flags and
// defaults on pflag, in sections (Flags), checks them (Validate) and turns them into the app
// package's configuration (Config). main only parses and calls these; the
// flag reference docs/command-line-flags.txt is generated from them and
// checked by TestFlagReference (make verify).
package options
