//go:build !linux

package pgembed

import "syscall"

// sysProcAttr runs postgres in its own process group as cred. Without Linux's parent-death
// signal, a postgres whose owner is killed keeps running until stopped.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}
