package awsfront

import (
	"encoding/json"
	"strings"
	"testing"
)

func mustItem(t *testing.T, s string) ddbItem {
	t.Helper()
	var it ddbItem
	if err := json.Unmarshal([]byte(s), &it); err != nil {
		t.Fatalf("item %s: %v", s, err)
	}
	return it
}

// str is a string attribute value of n bytes.
func strOf(n int) string { return `{"S":"` + strings.Repeat("x", n) + `"}` }

func TestItemSize(t *testing.T) {
	for _, tc := range []struct {
		name, item string
		want       int
	}{
		{"string: name + UTF-8 bytes", `{"name":{"S":"abc"}}`, 4 + 3},
		{"UTF-8 counts bytes, not runes", `{"é":{"S":"日本"}}`, 2 + 6},
		{"number: 5 significant digits = 3 bytes + 1", `{"n":{"N":"123.45"}}`, 1 + 4},
		{"number: zeroes trimmed, 1 digit", `{"n":{"N":"-1000"}}`, 1 + 2},
		{"number: 13 digits (epoch millis)", `{"t":{"N":"1764288000123"}}`, 1 + 8},
		{"binary: raw bytes, not base64", `{"b":{"B":"AAECAw=="}}`, 1 + 4},
		{"bool and null: 1 byte", `{"ok":{"BOOL":true},"no":{"NULL":true}}`, 3 + 3},
		{"string set: its members", `{"ss":{"SS":["ab","cde"]}}`, 2 + 5},
		{"empty map: 3 bytes", `{"m":{"M":{}}}`, 1 + 3},
		{"list: 3 + each element + 1 byte each", `{"l":{"L":[{"S":"ab"},{"N":"7"}]}}`, 1 + 3 + (2 + 1) + (2 + 1)},
		{"map: 3 + names + values + 1 byte each", `{"m":{"M":{"k":{"S":"v"}}}}`, 1 + 3 + (1 + 1 + 1)},
		{"nothing", `{}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ItemSize(mustItem(t, tc.item))
			if err != nil || got != tc.want {
				t.Errorf("ItemSize(%s) = %d, %v; want %d", tc.item, got, err, tc.want)
			}
		})
	}
	if _, err := ItemSize(mustItem(t, `{"x":{"Q":"1"}}`)); err == nil {
		t.Error("unknown type: no error")
	}
}

// TestUnits holds the arithmetic to the developer guide's worked examples
// ("DynamoDB read and write operations").
func TestUnits(t *testing.T) {
	const kb = 1024
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"3,500-byte item read strongly: as 4 KB, 1 unit", ReadUnits(3500, Strong), 1},
		{"3.5 KB item read eventually: 0.5", ReadUnits(3584, Eventual), 0.5},
		{"10 KB item rounds to 12 KB: 3 strong", ReadUnits(10*kb, Strong), 3},
		{"10 KB item: 1.5 eventual", ReadUnits(10*kb, Eventual), 1.5},
		{"8 KB item: 2 strong", ReadUnits(8*kb, Strong), 2},
		{"8 KB item: 1 eventual", ReadUnits(8*kb, Eventual), 1},
		{"8 KB item: 4 transactional", ReadUnits(8*kb, Transactional), 4},
		{"BatchGetItem of 1.5 KB and 6.5 KB: 4 KB + 8 KB, 3 strong",
			ReadUnits(1536, Strong) + ReadUnits(6656, Strong), 3},
		{"no item read: the minimum, 0.5 eventual", ReadUnits(0, Eventual), 0.5},
		{"no item read: the minimum, 1 strong", ReadUnits(0, Strong), 1},
		{"1 KB write: 1 unit", WriteUnits(kb, false), 1},
		{"1.5 KB write: 2 units", WriteUnits(1536, false), 2},
		{"1 KB transactional write: 2 units", WriteUnits(kb, true), 2},
		{"deleting an absent item: 1 unit", WriteUnits(0, false), 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestWriteCost covers the table's write (the larger of before and after)
// and a sparse index's writes.
func TestWriteCost(t *testing.T) {
	s := tableSchema{keys: []string{"pk", "sk"}, indexes: []indexSchema{
		{name: "byPhase", keys: []string{"phase"}, projection: "ALL"},
		{name: "byPool", keys: []string{"pool"}, projection: "KEYS_ONLY"},
	}}
	// Sizes: pk "a" 3, sk "b" 3, data d bytes 4+d, phase "p" 6, pool "x" 5.
	item := func(data int, extra string) ddbItem {
		return mustItem(t, `{"pk":{"S":"a"},"sk":{"S":"b"},"data":`+strOf(data)+extra+`}`)
	}
	const phase, pool = `,"phase":{"S":"p"}`, `,"pool":{"S":"x"}`
	for _, tc := range []struct {
		name          string
		before, after ddbItem
		tx            bool
		table, index  float64
	}{
		{"new item in no index: 1.5 KB, 2 units", nil, item(1526, ""), false, 2, 0},
		{"new item in the phase index: 2 table + 2 index", nil, item(1520, phase), false, 2, 2},
		{"put over a larger item: the larger counts", item(3000, ""), item(10, ""), false, 3, 0},
		{"update a projected attribute: 1 index write of the larger entry", item(100, phase), item(2000, phase), false, 2, 2},
		{"index key changes: delete + put", item(100, phase), item(100, `,"phase":{"S":"q"}`), false, 1, 2},
		{"leaves the index: one delete", item(1100, phase), item(1100, ""), false, 2, 2},
		{"KEYS_ONLY index, non-key attribute changed: no index write", item(10, pool), item(20, pool), false, 1, 0},
		{"KEYS_ONLY index entry appears: its keys only (3+3+5 bytes)", item(5000, ""), item(5000, pool), false, 5, 1},
		{"unchanged item (a condition check): no index write", item(10, phase), item(10, phase), false, 1, 0},
		{"delete: the item's size", item(2100, phase), nil, false, 3, 3},
		{"delete of nothing: 1 unit", nil, nil, false, 1, 0},
		{"transactional: twice the table's units, not the index's", nil, item(1520, phase), true, 4, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table, index, err := writeCost(s, tc.before, tc.after, tc.tx)
			if err != nil || table != tc.table || index != tc.index {
				t.Errorf("writeCost = table %v index %v (%v); want %v and %v", table, index, err, tc.table, tc.index)
			}
		})
	}
}

func TestUnfilteredKeepsOnlyTheKeyCondition(t *testing.T) {
	var in map[string]json.RawMessage
	_ = json.Unmarshal([]byte(`{"TableName":"t","KeyConditionExpression":"#p = :p","FilterExpression":"#s = :s",
		"ProjectionExpression":"#s","Limit":5,"ExpressionAttributeNames":{"#p":"pk","#s":"state"},
		"ExpressionAttributeValues":{":p":{"S":"a"},":s":{"S":"x"}}}`), &in)
	out := unfiltered(in)
	b, _ := json.Marshal(out)
	want := `{"ExpressionAttributeNames":{"#p":"pk"},"ExpressionAttributeValues":{":p":{"S":"a"}},"KeyConditionExpression":"#p = :p","Limit":5,"TableName":"t"}`
	if string(b) != want {
		t.Errorf("unfiltered = %s\nwant %s", b, want)
	}
}
