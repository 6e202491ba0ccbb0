package canonjson

import (
	"encoding/json"
	"math"
	"testing"
	"unicode/utf8"
)

func TestSorted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"keys sorted", map[string]any{"b": 1, "a": 2, "A": 3}, `{"A":3,"a":2,"b":1}`},
		{"struct fields sorted", struct {
			Z int `json:"z"`
			Y int `json:"y"`
		}{1, 2}, `{"y":2,"z":1}`},
		{"no html escaping", map[string]string{"x": "<a&b>"}, `{"x":"<a&b>"}`},
		{"es numbers", []float64{1, 1.5, 1e21, 1e-7, 100}, `[1,1.5,1e+21,1e-7,100]`},
		{"nested", map[string]any{"o": map[string]any{"d": []any{"x", nil, true}, "c": 0}}, `{"o":{"c":0,"d":["x",null,true]}}`},
		{"utf16 key order", map[string]int{"\u20ac": 1, "\U0001F600": 2, "z": 3}, `{"z":3,"€":1,"😀":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Sorted(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Sorted = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestOrdered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"object order kept", Object{{"b", 1}, {"a", Object{{"y", "1"}, {"x", nil}}}}, `{"b":1,"a":{"y":"1","x":null}}`},
		{"struct order kept", struct {
			Z int `json:"z"`
			Y int `json:"y"`
		}{1, 2}, `{"z":1,"y":2}`},
		{"no html escaping", "<script>&", `"<script>&"`},
		{"line separators literal", "a\u2028b\u2029c", "\"a\u2028b\u2029c\""},
		{"escaped backslash before u2028 text", `\u2028 and \\u2029` + "\u2028", `"\\u2028 and \\\\u2029` + "\u2028" + `"`},
		{"control escapes", "\n\t\x01\"\\", `"\n\t\u0001\"\\"`},
		{"js numbers", []float64{0.1, 123456789012345680000, 1e21, 5e-324, -0.000001}, `[0.1,123456789012345680000,1e+21,5e-324,-0.000001]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Ordered(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Ordered = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	if _, err := Sorted(math.NaN()); err == nil {
		t.Error("Sorted(NaN): want error")
	}
	if _, err := Ordered(make(chan int)); err == nil {
		t.Error("Ordered(chan): want error")
	}
	if _, err := Ordered(Object{{"c", func() {}}}); err == nil {
		t.Error("Ordered(Object with func): want error")
	}
}

func TestSHA256Hex(t *testing.T) {
	t.Parallel()
	if got := SHA256Hex([]byte("abc")); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("SHA256Hex(abc) = %s", got)
	}
}

// FuzzSorted checks that Sorted never panics and is idempotent on valid JSON input.
func FuzzSorted(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1,2,{"z":null}]}`, `"x"`, `1e30`, `[]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return
		}
		a, err := Sorted(v)
		if err != nil {
			return
		}
		var w any
		if err := json.Unmarshal(a, &w); err != nil {
			t.Fatalf("Sorted output is not JSON: %s", a)
		}
		b, err := Sorted(w)
		if err != nil || string(a) != string(b) {
			t.Fatalf("not idempotent: %s vs %s (%v)", a, b, err)
		}
	})
}

// FuzzOrderedString checks that Ordered output of any valid UTF-8 string decodes back to
// the same string and holds no escaped JavaScript line terminator.
func FuzzOrderedString(f *testing.F) {
	for _, s := range []string{"a\u2028b", `\u2028`, `\\u2029` + "\u2029", "<&>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		out, err := Ordered(s)
		if err != nil {
			t.Fatal(err)
		}
		var back string
		if err := json.Unmarshal(out, &back); err != nil || back != s {
			t.Fatalf("round trip of %q via %s = %q, %v", s, out, back, err)
		}
	})
}

// TestSortedJSONMatchesSorted: canonicalizing JSON text directly gives the bytes Sorted
// gives for the decoded value, and invalid text is an error.
func TestSortedJSONMatchesSorted(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"b":1,"a":[true,null,{"z":"<&>","y":1e3}],"c":"\u00e9"}`,
		`[1.50, -0, 1E-7, 123456789012]`,
		`"plain"`,
	} {
		var v any
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			t.Fatal(err)
		}
		want, err := Sorted(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := SortedJSON([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("SortedJSON(%s) = %s, want %s", in, got, want)
		}
	}
	if _, err := SortedJSON([]byte(`{"a":`)); err == nil {
		t.Error("SortedJSON accepted invalid JSON")
	}
}
