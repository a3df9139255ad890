package history

import (
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

func TestCallerLimiter(t *testing.T) {
	l := NewCallerLimiter(2)
	alice := &user.DefaultInfo{Name: "alice", UID: "1"}
	bob := &user.DefaultInfo{Name: "bob", UID: "2"}
	r1, ok1 := l.Acquire(alice)
	r2, ok2 := l.Acquire(alice)
	if !ok1 || !ok2 {
		t.Fatal("alice's first two requests must be served")
	}
	if _, ok := l.Acquire(alice); ok {
		t.Fatal("alice's third request must be refused")
	}
	rb, ok := l.Acquire(bob)
	if !ok {
		t.Fatal("bob has his own places")
	}
	r1()
	r3, ok := l.Acquire(alice)
	if !ok {
		t.Fatal("a released place is free again")
	}
	r2()
	r3()
	rb()
	if len(l.users) != 0 {
		t.Errorf("callers with nothing in flight are forgotten: %v", l.users)
	}
	if NewCallerLimiter(0).Limit() != DefaultMaxInFlightPerUser {
		t.Error("the default applies to a limit <= 0")
	}
}
