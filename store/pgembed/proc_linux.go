package pgembed

import "syscall"

// sysProcAttr runs postgres in its own process group (a terminal's Ctrl-C reaches the owner,
// which then stops postgres in order) as cred, and has the kernel send it SIGINT (fast
// shutdown) when the thread that started it exits, which for a Go program is when the process
// dies (unless the caller started it from a runtime.LockOSThread goroutine that then exits), so
// the server never outlives its owner. Go sets the death signal after switching credentials,
// which would otherwise clear it.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred, Pdeathsig: syscall.SIGINT}
}
