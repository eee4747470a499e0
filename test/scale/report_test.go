package scale

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestSplice(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"no section yet", "# Benchmarks\n\nText.\n", "# Benchmarks\n\nText.\n\n## Scale\n\n" + beginMarker + "\nNEW\n" + endMarker + "\n"},
		{"section replaced", "# B\n\n## Scale\n\n" + beginMarker + "\nOLD\n" + endMarker + "\n\n## After\n", "# B\n\n## Scale\n\n" + beginMarker + "\nNEW\n" + endMarker + "\n\n## After\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := splice(tc.doc, "NEW\n"); got != tc.want {
				t.Errorf("splice:\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestParseSizes(t *testing.T) {
	got, err := ParseSizes("2, 10%,100")
	if err != nil {
		t.Fatal(err)
	}
	want := []Size{{2, 100, 3000}, {10, 500, 15000}, {100, 5000, 150000}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseSizes = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "0", "101", "x"} {
		if _, err := ParseSizes(bad); err == nil {
			t.Errorf("ParseSizes(%q): no error", bad)
		}
	}
}

// TestItemRoundTrip: an item kept as JSON comes back the same.
func TestItemRoundTrip(t *testing.T) {
	in := &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		"s": &types.AttributeValueMemberS{Value: "x"}, "n": &types.AttributeValueMemberN{Value: "12"},
		"b": &types.AttributeValueMemberB{Value: []byte{0, 1, 2}}, "bool": &types.AttributeValueMemberBOOL{Value: true},
		"ss": &types.AttributeValueMemberSS{Value: []string{"a", "b"}}, "l": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberNULL{Value: true}}},
	}}
	j, err := avJSON(in)
	if err != nil {
		t.Fatal(err)
	}
	var back any
	if err := readJSONString(t, j, &back); err != nil {
		t.Fatal(err)
	}
	out, err := av(back)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip: %#v, want %#v", out, in)
	}
}

func TestSVG(t *testing.T) {
	f := &Figures{Sizes: []*SizeFigures{
		{Size: SizeOf(1), Passes: []Pass{{Function: "provision", Pass: "sweep", Mode: "warm", WallS: 1, KubeRequests: 20}}},
		{Size: SizeOf(10), Passes: []Pass{{Function: "provision", Pass: "sweep", Mode: "warm", WallS: 3, KubeRequests: 25}}},
	}}
	svg := string(f.SVG())
	if !strings.HasPrefix(svg, "<svg") || strings.Count(svg, "<polyline") != 2 || !strings.Contains(svg, "provision sweep warm") {
		t.Errorf("SVG: want two lines (wall, requests) and the legend:\n%s", svg)
	}
}

func readJSONString(t *testing.T, v any, out any) error {
	t.Helper()
	dir := t.TempDir() + "/x.json"
	if err := writeJSON(dir, v); err != nil {
		return err
	}
	return readJSON(dir, out)
}
