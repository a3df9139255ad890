package auditsink

import "testing"

func TestBodyClasses(t *testing.T) {
	t.Parallel()
	prev := 0
	for n := minPooledBody + 1; n <= 64<<20; n += 4093 {
		class, size := bodyClass(n)
		if size < n || size >= n+n/4+1 {
			t.Fatalf("%d bytes: a buffer of %d (want at least the body, less than a quarter more)", n, size)
		}
		if c2, s2 := bodyClass(size); c2 != class || s2 != size {
			t.Fatalf("%d bytes: class %d of %d, but the buffer's own class is %d of %d", n, class, size, c2, s2)
		}
		if class < prev {
			t.Fatalf("%d bytes: class %d after %d", n, class, prev)
		}
		prev = class
	}
	if _, size := bodyClass(3 << 20); size != 3<<20 {
		t.Errorf("3 MiB: a buffer of %d", size)
	}
	b := newBody(3<<20 + 1)
	if cap(b) != 3<<20+1<<19 {
		t.Errorf("3 MiB and a byte: capacity %d", cap(b))
	}
}
