package store

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// hostileStrings are the strings of api/escape/testdata/hostile.txt that
// are valid UTF-8 with no NUL (what the model hands the store).
func hostileStrings(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../api/escape/testdata/hostile.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := strconv.Unquote(strings.Split(line, "\t")[0])
		if err != nil {
			t.Fatalf("hostile.txt: %q: %v", line, err)
		}
		if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
			out = append(out, s)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// jsonbCorpus is JSON text jsonbText must print as PostgreSQL does (sure)
// and JSON it must answer unsure of.
func jsonbCorpus(t *testing.T) (sure, unsure []string) {
	hostile := hostileStrings(t)
	sure = []string{
		`{}`, `[]`, `{"a":{}}`, `[[],{}]`, `null`, `true`, `false`, `"x"`, `0`, `-1`, `7`,
		`123456789012345678901234567890`, `-98765432109876543210987654321`,
		`{"b":1,"a":2}`, `{"bb":1,"a":2,"ccc":3,"aa":4,"c":5}`, " {\n\t\"x\" : [ 1 ,2] } ",
		`{"é":1,"z":2,"zz":3}`, `{"\u00e9":"\u00e9"}`, `{"\ud83d\ude00":"\ud83d\ude00"}`,
		`{"s":"\u003c\u003e\u0026\u2028\u2029\u202e\/"}`, `{"s":"\b\f\n\r\t\"\\"}`,
		`{"s":"\u0001\u001f\u007f\u0080\u00a0"}`, `{"s":"\u001F\u000B"}`, `{"s":"\ufffd"}`, "\"\u007f\u0085\"",
		`{"z":["1"],"a":[]}`, `{"b":"1","a":"2"}`, `{"a":[true,false,null,{"x":[0,-5]}]}`,
		`{"a":[{"b":[{"c":[{"d":[]}]}]}]}`, `{"A":1,"a":2,"B":3,"_":4,"~":5," ":6,"":7}`,
	}
	for _, s := range hostile {
		for _, v := range []any{map[string]string{s: s}, []string{s, s + s}, map[string]any{s: map[string]any{s + "x": []any{s, int64(len(s))}}, "k": s}} {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			sure = append(sure, string(b))
		}
		// encoding/json's escapes (\u003c, \u2028), and the text as
		// written: escape_json prints both the same.
		sure = append(sure, `"`+strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(rawControls(s))+`"`)
	}
	// Generated maps: hostile keys (many of one length), control
	// characters, nested values, empty objects and arrays.
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		b, err := json.Marshal(randomJSON(r, hostile, 0))
		if err != nil {
			t.Fatal(err)
		}
		sure = append(sure, string(b))
	}
	unsure = []string{
		`1.0`, `1e3`, `-0`, `{"n":1E2}`, `{"n":0.5}`, `[-0]`, `{"n":1e400}`, `{"n":-0.0e-0}`,
		`{"a":1,"a":2}`, `{"a":{"x":1,"x":1}}`, `{"s":"\u0000"}`, `{"\u0000":1}`,
		`{"s":"\ud83d"}`, `{"s":"\ude00x"}`, "{\"s\":\"\xff\"}", "\"\xc3\x28\"", `{"a":1} {"b":2}`, `{"a":1}]`,
		`{"a":[true,false,null,{"x":[0,-0.5e0]}]}`, ``, `{`, `"\ud83d\ufffd"`, `"\ufffd\ud83d\ude00"`,
		// Nested deeper than jsonbMaxNest: unsure (its time would grow
		// with the square of the depth), and read back.
		strings.Repeat("[", jsonbMaxNest+2) + strings.Repeat("]", jsonbMaxNest+2),
		strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000),
	}
	// As deep as jsonbMaxNest allows: printed, as PostgreSQL does.
	sure = append(sure, strings.Repeat(`{"a":[`, jsonbMaxNest/2)+"1"+strings.Repeat("]}", jsonbMaxNest/2))
	return sure, unsure
}

// rawControls writes control characters of s raw, which JSON does not
// allow in a string, as \u00XX in upper case: escape_json's lower case
// must come out.
func rawControls(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c < 0x20 {
			fmt.Fprintf(&b, `\u%04X`, c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func randomJSON(r *rand.Rand, hostile []string, depth int) any {
	str := func() string {
		switch r.IntN(5) {
		case 0:
			return hostile[r.IntN(len(hostile))]
		case 1:
			return string([]byte{byte('a' + r.IntN(3)), byte(r.IntN(0x20) + 1)}) // equal lengths, controls
		case 2:
			return string([]rune{rune(r.IntN(0x3000) + 1)})
		case 3:
			return strings.Repeat("k", r.IntN(4))
		}
		return strconv.Itoa(r.IntN(1000))
	}
	switch n := r.IntN(9); {
	case depth < 4 && n < 3:
		m := map[string]any{}
		for range r.IntN(6) {
			m[str()] = randomJSON(r, hostile, depth+1)
		}
		return m
	case depth < 4 && n < 5:
		a := []any{}
		for range r.IntN(4) {
			a = append(a, randomJSON(r, hostile, depth+1))
		}
		return a
	case n == 5:
		return r.Int64() - r.Int64()
	case n == 6:
		return r.IntN(2) == 0
	case n == 7:
		return nil
	}
	return str()
}

// TestJSONBText: jsonbText prints what PostgreSQL prints for the jsonb of
// the hostile corpus and generated JSON (col::text of the value stored),
// and is unsure of what it cannot know.
func TestJSONBText(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	sure, unsure := jsonbCorpus(t)
	var printed []string
	for _, in := range sure {
		out, err := jsonbText([]byte(in))
		if err != nil {
			t.Errorf("jsonbText(%q): %v, want PostgreSQL's text", in, err)
			continue
		}
		printed = append(printed, string(out))
	}
	for _, in := range unsure {
		if out, err := jsonbText([]byte(in)); err == nil {
			t.Errorf("jsonbText(%q) = %q, want unsure", in, out)
		}
	}
	if t.Failed() {
		return
	}
	// Stored in a jsonb column, as a batch stores user_extra and
	// annotations, and printed by PostgreSQL.
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE j (n int, v jsonb)`); err != nil {
		t.Fatal(err)
	}
	rows := make([][]any, len(sure))
	for i, in := range sure {
		rows[i] = []any{i, []byte(in)}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"j"}, []string{"n", "v"}, pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(sure))
	r, err := tx.Query(ctx, `SELECT n, v::text FROM j`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var n int
		var text string
		if err := r.Scan(&n, &text); err != nil {
			t.Fatal(err)
		}
		got[n] = text
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	for i, in := range sure {
		if got[i] != printed[i] {
			t.Errorf("jsonb of %q:\n PostgreSQL %q\n jsonbText  %q", in, got[i], printed[i])
		}
	}
	t.Logf("%d JSON texts printed as PostgreSQL does, %d unsure", len(sure), len(unsure))
}

// TestAppendUnquoted: jsonbText decodes a string's escapes as
// encoding/json does (surrogate pairs, lone surrogates, every escape).
func TestAppendUnquoted(t *testing.T) {
	raws := []string{
		``, `x`, `\"\\\/\b\f\n\r\t`, `\u00e9\u00E9`, `\ud83d\ude00`, `\uD83D\uDE00x`, `\ud83d`, `\ude00`, `\ud83dx`,
		`\ud83d\ud83d\ude00`, `\ud83d\u0041`, `\ude00\ud83d`, `\ud83d\\ude00`, `\u0000\u001f\u007f`, `a\u2028b\u2029`,
		`\ufffd`, `\ud800\udc00\udbff\udfff`, "é\\n😀",
	}
	for _, s := range hostileStrings(t) {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, string(b[1:len(b)-1]), strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(rawControls(s)))
	}
	for _, raw := range raws {
		var want string
		if err := json.Unmarshal([]byte(`"`+raw+`"`), &want); err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if got := appendUnquoted([]byte("<"), []byte(raw)); string(got) != "<"+want {
			t.Errorf("appendUnquoted(%q) = %q, want %q", raw, got[1:], want)
		}
	}
}

// TestSurrogateEscapeScan: hasSurrogateEscape finds what the regexp
// \\u[dD][89abcdefABCDEF] it replaced finds, over the corpus and escapes
// cut short, doubled or in every case.
func TestSurrogateEscapeScan(t *testing.T) {
	re := regexp.MustCompile(`\\u[dD][89abcdefABCDEF]`)
	sure, unsure := jsonbCorpus(t)
	texts := append(append([]string{}, sure...), unsure...)
	for _, a := range []string{"d", "D", "c", "e"} {
		for _, b := range []string{"7", "8", "9", "a", "F", "f", "g", "G", "0", ""} {
			for _, pre := range []string{`\u`, `\\u`, `u`, `\`, `\U`, `x\u\u`} {
				texts = append(texts, pre+a+b, pre+a+b+"00", "x"+pre+a)
			}
		}
	}
	found := 0
	for _, s := range texts {
		want := re.MatchString(s)
		if got := hasSurrogateEscape([]byte(s)); got != want {
			t.Errorf("hasSurrogateEscape(%q) = %v, the regexp %v", s, got, want)
		}
		if want {
			found++
		}
	}
	if found == 0 || found == len(texts) {
		t.Errorf("%d of %d texts escape a surrogate: the test does not try both", found, len(texts))
	}
}
