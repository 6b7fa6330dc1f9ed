package cpulist

import (
	"slices"
	"testing"
)

func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		out  string
	}{
		{"", nil, ""},
		{"0", []int{0}, "0"},
		{"0-3,8,10-11", []int{0, 1, 2, 3, 8, 10, 11}, "0-3,8,10-11"},
		{" 3,1,2 \n", []int{1, 2, 3}, "1-3"},
		{"0-6:2", []int{0, 2, 4, 6}, "0,2,4,6"},
		{"1,1,1", []int{1}, "1"},
	} {
		got, err := Parse(tc.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Parse(%q) = %v, want %v", tc.in, got, tc.want)
		}
		if f := Format(got); f != tc.out {
			t.Errorf("Format(%v) = %q, want %q", got, f, tc.out)
		}
	}
	for _, bad := range []string{"a", "3-1", "1,,2", "-1", "99999", "0-4:0"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): want error", bad)
		}
	}
}

func TestParseMask(t *testing.T) {
	got, err := ParseMask("00000001,0000000f\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 1, 2, 3, 32}; !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	if _, err := ParseMask("zz"); err == nil {
		t.Fatal("want error")
	}
}

func TestUnion(t *testing.T) {
	for _, c := range []struct{ a, b, want []int }{
		{nil, nil, nil},
		{[]int{}, nil, nil},
		{[]int{3, 1}, nil, []int{1, 3}},
		{[]int{5, 2}, []int{2, 0, 5}, []int{0, 2, 5}},
	} {
		a := slices.Clone(c.a)
		if got := Union(c.a, c.b); !slices.Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("Union(%v, %v) = %#v, want %#v", c.a, c.b, got, c.want)
		}
		if !slices.Equal(a, c.a) {
			t.Errorf("Union changed its argument: %v, was %v", c.a, a)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"0-3,8", "", "1-2:1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(Format(c))
		if err != nil || !slices.Equal(again, c) {
			t.Fatalf("round trip %q: %v %v vs %v", s, err, again, c)
		}
	})
}

func TestIntersect(t *testing.T) {
	for _, c := range []struct{ a, b, want []int }{
		{nil, []int{1}, nil},
		{[]int{5, 2, 7}, []int{2, 7, 9}, []int{2, 7}},
		{[]int{0, 1}, []int{4, 5}, nil},
	} {
		if got := Intersect(c.a, c.b); !slices.Equal(got, c.want) {
			t.Errorf("Intersect(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
