package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// process is one control-plane binary running in its own process group, with
// stdout and stderr appended to a log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{} // closed when the process has exited
	waitErr error         // valid after done is closed
}

// startProcess starts bin with args in its own process group. The process is
// also sent SIGKILL if the test binary dies (Pdeathsig), so a crashed or
// timed-out test leaks nothing.
func startProcess(name, bin string, args []string, logDir string) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	fmt.Fprintf(f, "+ %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, logFile: f, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has already exited, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		if p.waitErr == nil {
			return true, fmt.Errorf("%s exited with status 0", p.name)
		}
		return true, fmt.Errorf("%s exited: %w", p.name, p.waitErr)
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs
// the group. It always reaps the process and closes the log file.
func (p *process) stop(grace time.Duration) {
	pgid := p.cmd.Process.Pid
	if ok, _ := p.exited(); !ok {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
		}
	}
	// Kill whatever is left of the group, even if the leader exited.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
	p.logFile.Close()
}

// tail returns the last n lines of the process' log file.
func (p *process) tail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.logPath, err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// bindAttempts bounds how often startBound starts a process again on new
// ports.
const bindAttempts = 5

// pickPorts chooses the ports startBound passes to a process (a variable so
// the test can hand out a taken one).
var pickPorts = freePorts

// startBound starts a process that binds the n loopback ports args is given
// and waits with ready. The binaries take no listener, so a free port is
// chosen and passed by number; another process can take it before the
// binary binds it. A process that exits because its address is in use is
// therefore started again on new ports, up to bindAttempts times: the race
// costs a restart, never the test.
func startBound(ctx context.Context, name, bin string, n int, logDir string, args func(ports []int) []string, ready func(*process) error) (*process, error) {
	for attempt := 1; ; attempt++ {
		ports, err := pickPorts(n)
		if err != nil {
			return nil, err
		}
		offset := int64(0)
		if st, err := os.Stat(filepath.Join(logDir, name+".log")); err == nil {
			offset = st.Size()
		}
		p, err := startProcess(name, bin, args(ports), logDir)
		if err != nil {
			return nil, err
		}
		err = ready(p)
		if err == nil {
			return p, nil
		}
		dead, _ := p.exited()
		if !dead || attempt == bindAttempts || !p.addressInUse(offset) {
			p.stop(10 * time.Second)
			// Not among the control plane's processes: its log is shown here.
			return nil, fmt.Errorf("%w\nlast lines of %s (%s):\n%s", err, p.name, p.logPath, p.tail(60))
		}
		p.stop(10 * time.Second)
		bindRetries.Add(1)
	}
}

// bindRetries counts the processes started again because a port was taken.
var bindRetries atomic.Int64

// addressInUse reports whether the process' log, from offset on, says that
// it could not bind an address because it was in use.
func (p *process) addressInUse(offset int64) bool {
	data, err := os.ReadFile(p.logPath)
	if err != nil || int64(len(data)) < offset {
		return false
	}
	return bytes.Contains(data[offset:], []byte("address already in use"))
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. All listeners are
// held until every port is chosen, so the ports differ; another process may
// still take one before the control plane binds it (see startBound).
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []io.Closer
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

var errNotReady = errors.New("not ready")
