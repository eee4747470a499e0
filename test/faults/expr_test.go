package faults

import (
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func s(v string) types.AttributeValue     { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue     { return &types.AttributeValueMemberN{Value: v} }
func b(v bool) types.AttributeValue       { return &types.AttributeValueMemberBOOL{Value: v} }
func ss(v ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: v} }

// The conditions shared/state and the webhook write, evaluated as
// DynamoDB does.
func TestEvalCondition(t *testing.T) {
	lease := item{"pk": s("c"), "sk": s("lease#provision"), "holder": s("a"), "token": n("3"), "until": n("1000"), "rerun": b(false)}
	names := map[string]string{"#pk": "pk", "#h": "holder", "#t": "token", "#u": "until", "#r": "rerun", "#v": "v", "#sk": "sk", "#exp": "expiresAt"}
	cases := []struct {
		name   string
		cond   string
		values item
		it     item
		want   bool
		err    bool
	}{
		{"not exists on a missing item", "attribute_not_exists(#pk)", nil, nil, true, false},
		{"not exists on an item", "attribute_not_exists(#pk)", nil, lease, false, false},
		{"version equal", "#v = :v", item{":v": n("2")}, item{"v": n("2")}, true, false},
		{"version differs", "#v = :v", item{":v": n("2")}, item{"v": n("3")}, false, false},
		{"version on a missing item", "#v = :v", item{":v": n("2")}, nil, false, false},
		{"numbers compare as numbers", "#u < :now", item{":now": n("999.5")}, item{"until": n("1000")}, false, false},
		{"acquire: expired", "attribute_not_exists(#h) OR #u < :now", item{":now": n("1001")}, lease, true, false},
		{"acquire: held", "attribute_not_exists(#h) OR #u < :now", item{":now": n("999")}, lease, false, false},
		{"acquire: never taken", "attribute_not_exists(#h) OR #u < :now", item{":now": n("999")}, nil, true, false},
		{"fence holds", "#h = :h AND #t = :t AND #u >= :now", item{":h": s("a"), ":t": n("3"), ":now": n("1000")}, lease, true, false},
		{"fence: another token", "#h = :h AND #t = :t AND #u >= :now", item{":h": s("a"), ":t": n("2"), ":now": n("1000")}, lease, false, false},
		{"release: parentheses", "#h = :h AND #t = :t AND (attribute_not_exists(#r) OR #r = :f)", item{":h": s("a"), ":t": n("3"), ":f": b(false)}, lease, true, false},
		{"release: rerun asked", "#h = :h AND #t = :t AND (attribute_not_exists(#r) OR #r = :f)", item{":h": s("a"), ":t": n("3"), ":f": b(true)}, lease, false, false},
		{"AND binds tighter than OR", "#h = :x OR #h = :h AND #t = :z", item{":x": s("a"), ":h": s("b"), ":z": n("9")}, lease, true, false},
		{"NOT", "NOT attribute_exists(#h)", nil, lease, false, false},
		{"begins_with", "#pk = :pk AND begins_with(#sk, :p)", item{":pk": s("c"), ":p": s("lease#")}, lease, true, false},
		{"change log: in the window", "#pk = :pk AND #sk BETWEEN :from AND :to", item{":pk": s("c"), ":from": s("change#0000000000100"), ":to": s("change#~")}, item{"pk": s("c"), "sk": s("change#0000000000200#a#1")}, true, false},
		{"change log: before the window", "#pk = :pk AND #sk BETWEEN :from AND :to", item{":pk": s("c"), ":from": s("change#0000000000300"), ":to": s("change#~")}, item{"pk": s("c"), "sk": s("change#0000000000200#a#1")}, false, false},
		{"change log: not a change", "#pk = :pk AND #sk BETWEEN :from AND :to", item{":pk": s("c"), ":from": s("change#0000000000100"), ":to": s("change#~")}, lease, false, false},
		{"hint: expired", "attribute_not_exists(#pk) OR #exp <= :now", item{":now": n("5")}, item{"pk": s("c"), "expiresAt": n("5")}, true, false},
		{"undefined name", "#nope = :v", item{":v": n("1")}, lease, false, true},
		{"undefined value", "#v = :nope", nil, lease, false, true},
		{"unsupported function", "size(#h) > :v", item{":v": n("1")}, lease, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := evalCondition(c.cond, exprEnv{names, c.values}, c.it)
			if (err != nil) != c.err {
				t.Fatalf("error %v, want error %v", err, c.err)
			}
			if got != c.want {
				t.Fatalf("%q = %v, want %v", c.cond, got, c.want)
			}
		})
	}
}

// The updates shared/state writes.
func TestApplyUpdate(t *testing.T) {
	names := map[string]string{"#h": "holder", "#u": "until", "#r": "rerun", "#t": "token", "#e": "expiresAt", "#a": "asks", "#v": "v"}
	cases := []struct {
		name   string
		upd    string
		values item
		it     item
		want   item
		err    bool
	}{
		{"acquire a new lease", "SET #h = :h, #u = :u, #r = :f, #t = if_not_exists(#t, :zero) + :one, #e = :e",
			item{":h": s("a"), ":u": n("10"), ":f": b(false), ":zero": n("0"), ":one": n("1"), ":e": n("99")}, item{"pk": s("c")},
			item{"pk": s("c"), "holder": s("a"), "until": n("10"), "rerun": b(false), "token": n("1"), "expiresAt": n("99")}, false},
		{"acquire again: the token grows", "SET #t = if_not_exists(#t, :zero) + :one", item{":zero": n("0"), ":one": n("1")},
			item{"token": n("4")}, item{"token": n("5")}, false},
		{"ask for a rerun with asks", "SET #r = :t ADD #a :a", item{":t": b(true), ":a": ss("sweep")}, item{"asks": ss("x")},
			item{"rerun": b(true), "asks": ss("sweep", "x")}, false},
		{"release", "REMOVE #h, #u, #a SET #r = :f", item{":f": b(false)}, item{"holder": s("a"), "until": n("1"), "asks": ss("x"), "token": n("2")},
			item{"rerun": b(false), "token": n("2")}, false},
		{"pool version", "SET #v = :next", item{":next": n("3")}, item{"v": n("2")}, item{"v": n("3")}, false},
		{"+ on a missing attribute", "SET #v = #t + :one", item{":one": n("1")}, item{}, nil, true},
		{"two SET clauses", "SET #v = :a SET #t = :a", item{":a": n("1")}, item{}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := applyUpdate(c.upd, exprEnv{names, c.values}, c.it)
			if (err != nil) != c.err {
				t.Fatalf("error %v, want error %v", err, c.err)
			}
			if !c.err && !reflect.DeepEqual(got, c.want) {
				t.Fatalf("%q on %v = %v, want %v", c.upd, c.it, got, c.want)
			}
		})
	}
}
