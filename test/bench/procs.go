package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the times in /proc/<pid>/stat (USER_HZ, 100 on every
// Linux architecture Go supports).
const userHZ = 100

// procStat is what the bench reads from /proc/<pid>/stat.
type procStat struct {
	ppid     int
	cpu      time.Duration // utime + stime
	children time.Duration // cutime + cstime: children it has waited for
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, fmt.Errorf("read stat of pid %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may contain spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("pid %d: malformed stat", pid)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3 (state)
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("pid %d: short stat", pid)
	}
	n := func(k int) int64 { v, _ := strconv.ParseInt(f[k-3], 10, 64); return v }
	tick := time.Second / userHZ
	return procStat{
		ppid:     int(n(4)),
		cpu:      time.Duration(n(14)+n(15)) * tick,
		children: time.Duration(n(16)+n(17)) * tick,
	}, nil
}

// processCPU is the CPU time a process has used so far.
func processCPU(pid int) (time.Duration, error) {
	st, err := readProcStat(pid)
	return st.cpu, err
}

// treeCPU is the CPU time of a process and of its children, live or exited:
// PostgreSQL's postmaster forks every backend and background worker and
// reaps them, so their time ends up in its cutime/cstime when they exit
// (autovacuum workers, connections closed by the pool).
func treeCPU(root int) (time.Duration, int, error) {
	st, err := readProcStat(root)
	if err != nil {
		return 0, 0, err
	}
	total, n := st.cpu+st.children, 1
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, fmt.Errorf("list processes: %w", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == root {
			continue
		}
		c, err := readProcStat(pid)
		if err != nil || c.ppid != root {
			continue // gone, or not a child
		}
		total += c.cpu + c.children
		n++
	}
	return total, n, nil
}

// peakRSS is VmHWM, the process's peak resident set size, in bytes.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read status of pid %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("pid %d: VmHWM %q: %w", pid, rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("pid %d: no VmHWM in status", pid)
}

// postmasterPID reads the postmaster's pid from pgdata/postmaster.pid.
func postmasterPID(pgdata string) (int, error) {
	b, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("postmaster pid: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0, errors.New("postmaster pid: malformed postmaster.pid")
	}
	return pid, nil
}

// systemCPU is the CPU time every CPU of the machine has been busy (not
// idle, not waiting for I/O), from /proc/stat.
func systemCPU() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("read /proc/stat: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, errors.New("/proc/stat: no cpu line")
	}
	var busy int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest times are already in user
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += n
	}
	return time.Duration(busy) * (time.Second / userHZ), nil
}

// machine describes the host, for the report.
type machine struct {
	cpus    int
	model   string
	memory  string
	loadavg string
}

func describeMachine(cpus int) machine {
	m := machine{cpus: cpus, model: "unknown CPU", memory: "?", loadavg: "?"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
				m.memory = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.loadavg = strings.Join(f[:3], " ")
		}
	}
	return m
}
