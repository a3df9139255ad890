package model

import "testing"

func TestHasLoneSurrogate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		json string
		want bool
	}{
		{`{"a":"plain"}`, false},
		{`{"a":"\ud83d\ude00"}`, false},      // a pair
		{`{"a":"\uD83D\uDE00"}`, false},      // a pair, upper case
		{`{"a":"\u00e9\n\"\\"}`, false},      // other escapes
		{`{"a":"\\ud800"}`, false},           // an escaped backslash, then text
		{`{"a":"\ud800"}`, true},             // high alone
		{`{"a":"\udc00"}`, true},             // low alone
		{`{"a":"\ud800\u0041"}`, true},       // high, then no low
		{`{"a":"\ud800\ud800\udc00"}`, true}, // high, then a pair
		{`{"a":"x\\\ud800"}`, true},          // \\ then \ud800
		{`{"\ud800":1}`, true},               // in a key
		{`{"a":"\ud83d\ude00\udfff"}`, true}, // a pair, then low alone
		{`{"a":"\ud83d`, true},               // cut off
		{`{"a":"\u12"}`, false},              // not an escape of 4 digits
		{`{"a":"\ud83d\ude0"}`, true},        // low escape cut short
		{`{"a":"\ud83d\ude00\ud83d\ude00"}`, false},
	}
	for _, tt := range tests {
		if got := hasLoneSurrogate([]byte(tt.json)); got != tt.want {
			t.Errorf("hasLoneSurrogate(%s) = %v, want %v", tt.json, got, tt.want)
		}
	}
}

func TestSafeJSONReplacesLoneSurrogates(t *testing.T) {
	t.Parallel()
	out, changed := safeJSON([]byte(`{"a":"x\ud800y","b":"\ud83d\ude00"}`))
	if !changed || string(out) != "{\"a\":\"x\uFFFDy\",\"b\":\"😀\"}" {
		t.Errorf("safeJSON = %s, %v", out, changed)
	}
	if out, changed := safeJSON([]byte(`{"b":"\ud83d\ude00"}`)); changed || string(out) != `{"b":"\ud83d\ude00"}` {
		t.Errorf("a valid pair was rewritten: %s", out)
	}
}
