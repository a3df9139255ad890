package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/backofftest"
)

// refusingDatabase is the address of a "database" that accepts each
// connection and closes it at once: every attempt to reach it fails.
func refusingDatabase(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// unpreparedProcess is a process of `serve` whose store did not answer at
// start-up; its waits are recorded in delays (each fires at once) and ctx
// is cancelled at the n-th, which never fires.
func unpreparedProcess(t *testing.T, url string, n int, cancel context.CancelFunc) (*process, *[]time.Duration) {
	t.Helper()
	st, err := store.Connect(store.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	p := newProcess(ServeOptions{}, nil, slog.New(slog.DiscardHandler))
	p.st = st
	var delays []time.Duration
	p.after = func(d time.Duration) <-chan time.Time {
		delays = append(delays, d)
		if len(delays) == n {
			cancel()
			return nil // never fires: ctx ends the wait
		}
		c := make(chan time.Time, 1)
		c <- time.Time{}
		return c
	}
	return p, &delays
}

// TestKeepPreparingJitters: two replicas whose database is down at
// start-up do not retry in lockstep. Their delays (recorded, not waited)
// grow from 1 s to the cap, each within its jitter, and differ between the
// replicas.
func TestKeepPreparingJitters(t *testing.T) {
	addr := refusingDatabase(t)
	url := "postgres://nobody@" + addr + "/none?sslmode=disable&connect_timeout=5"
	var replicas [2][]time.Duration
	for i := range replicas {
		ctx, cancel := context.WithCancel(context.Background())
		p, delays := unpreparedProcess(t, url, 8, cancel)
		p.keepPreparing(ctx)
		cancel()
		select {
		case <-p.prepared:
			t.Fatalf("replica %d: prepared against a database that refuses every connection", i)
		default:
		}
		replicas[i] = *delays
		for j, d := range replicas[i] {
			if low, high := backofftest.Bounds(prepareBackoff, j); d < low || d > high {
				t.Errorf("replica %d, delay %d: %s, want within [%s, %s]", i, j+1, d, low, high)
			}
		}
	}
	if len(replicas[0]) != 8 || len(replicas[1]) != 8 {
		t.Fatalf("recorded %d and %d delays, want 8 each", len(replicas[0]), len(replicas[1]))
	}
	if slices.Equal(replicas[0], replicas[1]) {
		t.Errorf("two replicas retry in lockstep: both wait %v", replicas[0])
	}
}

// TestKeepPreparingStopsOnCancel: while it waits for the next attempt,
// cancelling ctx ends keepPreparing at once.
func TestKeepPreparingStopsOnCancel(t *testing.T) {
	url := "postgres://nobody@" + refusingDatabase(t) + "/none?sslmode=disable"
	st, err := store.Connect(store.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p := newProcess(ServeOptions{}, nil, slog.New(slog.DiscardHandler))
	p.st = st
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan struct{})
	p.after = func(time.Duration) <-chan time.Time { close(waiting); return nil } // never fires
	done := make(chan struct{})
	go func() { defer close(done); p.keepPreparing(ctx) }()
	<-waiting
	cancel()
	<-done
}

// TestKeepPreparingOpensTheRecord: the database refuses the first
// connections (as while it starts); keepPreparing retries and, once it
// answers, prepares the store (the migrations run) and stops.
func TestKeepPreparingOpensTheRecord(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	network, target := "tcp", net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
	if strings.HasPrefix(cfg.Host, "/") {
		network, target = "unix", filepath.Join(cfg.Host, fmt.Sprintf(".s.PGSQL.%d", cfg.Port))
	}
	// A proxy that drops the first three connections, then forwards.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if conns.Add(1) <= 3 {
				c.Close()
				continue
			}
			wg.Go(func() {
				defer c.Close()
				up, err := net.Dial(network, target)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c); up.Close() }()
				_, _ = io.Copy(c, up)
			})
		}
	}()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, delays := unpreparedProcess(t, dsn+" host="+host+" port="+port, 100, cancel)
	defer p.st.Close() // before wg.Wait: the proxied connections end
	p.keepPreparing(ctx)
	select {
	case <-p.prepared:
	default:
		t.Fatalf("not prepared after %d attempts (%d connections)", len(*delays), conns.Load())
	}
	if len(*delays) < 2 {
		t.Errorf("prepared after %d attempt(s), want a retry after the refused connections", len(*delays))
	}
	if err := p.st.Ping(context.Background()); err != nil {
		t.Errorf("ping the prepared store: %v", err)
	}
}
