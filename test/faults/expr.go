package faults

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// The DynamoDB expression subset shared/state (and the webhook's hints)
// writes: conditions made of comparisons (= <> < <= > >=), AND, OR, NOT,
// parentheses, BETWEEN, attribute_exists, attribute_not_exists and begins_with over
// #names and :values; updates made of SET (with if_not_exists and +/-),
// REMOVE and ADD (numbers and string sets). Anything else is an error, so
// a new expression in the store fails the suite instead of passing
// unchecked.

type item = map[string]types.AttributeValue

// exprEnv resolves #names and :values.
type exprEnv struct {
	names  map[string]string
	values item
}

func (e exprEnv) name(tok string) (string, error) {
	if !strings.HasPrefix(tok, "#") {
		return tok, nil
	}
	n, ok := e.names[tok]
	if !ok {
		return "", validation("expression attribute name %s is not defined", tok)
	}
	return n, nil
}

func (e exprEnv) value(tok string) (types.AttributeValue, error) {
	v, ok := e.values[tok]
	if !ok {
		return nil, validation("expression attribute value %s is not defined", tok)
	}
	return v, nil
}

var tokenCache sync.Map // expression -> []string

// tokenize splits an expression into names, values, words, operators and
// punctuation (cached: the store writes a few expressions many times).
func tokenize(s string) ([]string, error) {
	if t, ok := tokenCache.Load(s); ok {
		return t.([]string), nil
	}
	t, err := scan(s)
	if err == nil {
		tokenCache.Store(s, t)
	}
	return t, err
}

func scan(s string) ([]string, error) {
	var out []string
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case strings.ContainsRune("(),+-", c):
			out = append(out, string(c))
			i++
		case c == '=':
			out = append(out, "=")
			i++
		case c == '<' || c == '>':
			if i+1 < len(s) && (s[i+1] == '=' || (c == '<' && s[i+1] == '>')) {
				out = append(out, s[i:i+2])
				i += 2
			} else {
				out = append(out, string(c))
				i++
			}
		case c == '#' || c == ':' || c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c):
			j := i + 1
			for j < len(s) && (s[j] == '_' || unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j]))) {
				j++
			}
			out = append(out, s[i:j])
			i = j
		default:
			return nil, validation("unexpected %q in expression %q", c, s)
		}
	}
	return out, nil
}

// condParser evaluates a condition against an item (nil: no item).
type condParser struct {
	toks []string
	pos  int
	env  exprEnv
	it   item
}

// evalCondition reports whether cond holds for it (an empty condition
// always holds).
func evalCondition(cond string, env exprEnv, it item) (bool, error) {
	if strings.TrimSpace(cond) == "" {
		return true, nil
	}
	toks, err := tokenize(cond)
	if err != nil {
		return false, err
	}
	p := &condParser{toks: toks, env: env, it: it}
	v, err := p.or()
	if err != nil {
		return false, err
	}
	if p.pos != len(p.toks) {
		return false, validation("unexpected %q in condition %q", p.toks[p.pos], cond)
	}
	return v, nil
}

func (p *condParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *condParser) next() string {
	t := p.peek()
	p.pos++
	return t
}

func (p *condParser) expect(t string) error {
	if got := p.next(); got != t {
		return validation("want %q, got %q", t, got)
	}
	return nil
}

func (p *condParser) or() (bool, error) {
	v, err := p.and()
	if err != nil {
		return false, err
	}
	for strings.EqualFold(p.peek(), "OR") {
		p.next()
		w, err := p.and()
		if err != nil {
			return false, err
		}
		v = v || w
	}
	return v, nil
}

func (p *condParser) and() (bool, error) {
	v, err := p.not()
	if err != nil {
		return false, err
	}
	for strings.EqualFold(p.peek(), "AND") {
		p.next()
		w, err := p.not()
		if err != nil {
			return false, err
		}
		v = v && w
	}
	return v, nil
}

func (p *condParser) not() (bool, error) {
	if strings.EqualFold(p.peek(), "NOT") {
		p.next()
		v, err := p.not()
		return !v, err
	}
	return p.primary()
}

func (p *condParser) primary() (bool, error) {
	t := p.peek()
	switch {
	case t == "(":
		p.next()
		v, err := p.or()
		if err != nil {
			return false, err
		}
		return v, p.expect(")")
	case t == "attribute_exists" || t == "attribute_not_exists":
		p.next()
		if err := p.expect("("); err != nil {
			return false, err
		}
		name, err := p.env.name(p.next())
		if err != nil {
			return false, err
		}
		if err := p.expect(")"); err != nil {
			return false, err
		}
		_, ok := p.it[name]
		return ok == (t == "attribute_exists"), nil
	case t == "begins_with":
		p.next()
		if err := p.expect("("); err != nil {
			return false, err
		}
		a, err := p.operand()
		if err != nil {
			return false, err
		}
		if err := p.expect(","); err != nil {
			return false, err
		}
		b, err := p.operand()
		if err != nil {
			return false, err
		}
		if err := p.expect(")"); err != nil {
			return false, err
		}
		as, aok := a.(*types.AttributeValueMemberS)
		bs, bok := b.(*types.AttributeValueMemberS)
		return aok && bok && strings.HasPrefix(as.Value, bs.Value), nil
	}
	a, err := p.operand()
	if err != nil {
		return false, err
	}
	op := p.next()
	b, err := p.operand()
	if err != nil {
		return false, err
	}
	if op == "BETWEEN" {
		// a BETWEEN b AND c: b <= a <= c.
		if err := p.expect("AND"); err != nil {
			return false, err
		}
		c, err := p.operand()
		if err != nil {
			return false, err
		}
		lo, err := compare(a, ">=", b)
		if err != nil || !lo {
			return false, err
		}
		return compare(a, "<=", c)
	}
	return compare(a, op, b)
}

// operand is a #name (the item's attribute, nil when absent) or a :value.
func (p *condParser) operand() (types.AttributeValue, error) {
	t := p.next()
	switch {
	case strings.HasPrefix(t, ":"):
		return p.env.value(t)
	case strings.HasPrefix(t, "#"):
		n, err := p.env.name(t)
		if err != nil {
			return nil, err
		}
		return p.it[n], nil
	case t != "" && (unicode.IsLetter(rune(t[0])) || t[0] == '_'):
		return p.it[t], nil
	}
	return nil, validation("want an operand, got %q", t)
}

// compare applies op; a missing attribute makes every comparison false,
// and comparing values of different types is false too, as in DynamoDB.
func compare(a types.AttributeValue, op string, b types.AttributeValue) (bool, error) {
	switch op {
	case "=", "<>", "<", "<=", ">", ">=":
	default:
		return false, validation("unsupported operator %q", op)
	}
	if a == nil || b == nil {
		return false, nil
	}
	var c int
	switch x := a.(type) {
	case *types.AttributeValueMemberN:
		y, ok := b.(*types.AttributeValueMemberN)
		if !ok {
			return op == "<>", nil
		}
		xa, _ := new(big.Float).SetString(x.Value)
		ya, _ := new(big.Float).SetString(y.Value)
		if xa == nil || ya == nil {
			return false, validation("bad number %q or %q", x.Value, y.Value)
		}
		c = xa.Cmp(ya)
	case *types.AttributeValueMemberS:
		y, ok := b.(*types.AttributeValueMemberS)
		if !ok {
			return op == "<>", nil
		}
		c = strings.Compare(x.Value, y.Value)
	case *types.AttributeValueMemberBOOL:
		y, ok := b.(*types.AttributeValueMemberBOOL)
		if !ok {
			return op == "<>", nil
		}
		switch op {
		case "=":
			return x.Value == y.Value, nil
		case "<>":
			return x.Value != y.Value, nil
		}
		return false, validation("%s on booleans", op)
	default:
		return false, validation("comparison of %T is not in the fake's subset", a)
	}
	switch op {
	case "=":
		return c == 0, nil
	case "<>":
		return c != 0, nil
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	}
	return c >= 0, nil
}

// applyUpdate applies an update expression to a copy of it (nil: a new
// item) and returns the result.
func applyUpdate(upd string, env exprEnv, it item) (item, error) {
	out := item{}
	for k, v := range it {
		out[k] = v
	}
	toks, err := tokenize(upd)
	if err != nil {
		return nil, err
	}
	p := &condParser{toks: toks, env: env, it: it}
	seen := map[string]bool{}
	for p.pos < len(p.toks) {
		clause := strings.ToUpper(p.next())
		if seen[clause] {
			return nil, validation("two %s clauses in %q", clause, upd)
		}
		seen[clause] = true
		for {
			switch clause {
			case "SET":
				name, err := env.name(p.next())
				if err != nil {
					return nil, err
				}
				if err := p.expect("="); err != nil {
					return nil, err
				}
				v, err := p.setValue()
				if err != nil {
					return nil, err
				}
				out[name] = v
			case "REMOVE":
				name, err := env.name(p.next())
				if err != nil {
					return nil, err
				}
				delete(out, name)
			case "ADD":
				name, err := env.name(p.next())
				if err != nil {
					return nil, err
				}
				v, err := env.value(p.next())
				if err != nil {
					return nil, err
				}
				sum, err := add(out[name], v)
				if err != nil {
					return nil, err
				}
				out[name] = sum
			default:
				return nil, validation("unknown clause %q in %q", clause, upd)
			}
			if p.peek() != "," {
				break
			}
			p.next()
		}
	}
	return out, nil
}

// setValue is operand [(+|-) operand], where an operand may be
// if_not_exists(#name, :value).
func (p *condParser) setValue() (types.AttributeValue, error) {
	a, err := p.setOperand()
	if err != nil {
		return nil, err
	}
	if op := p.peek(); op == "+" || op == "-" {
		p.next()
		b, err := p.setOperand()
		if err != nil {
			return nil, err
		}
		if op == "-" {
			bn, ok := b.(*types.AttributeValueMemberN)
			if !ok {
				return nil, validation("- on a non-number")
			}
			b = &types.AttributeValueMemberN{Value: "-" + strings.TrimPrefix(bn.Value, "-")}
		}
		return add(a, b)
	}
	return a, nil
}

func (p *condParser) setOperand() (types.AttributeValue, error) {
	if p.peek() == "if_not_exists" {
		p.next()
		if err := p.expect("("); err != nil {
			return nil, err
		}
		name, err := p.env.name(p.next())
		if err != nil {
			return nil, err
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
		def, err := p.env.value(p.next())
		if err != nil {
			return nil, err
		}
		if err := p.expect(")"); err != nil {
			return nil, err
		}
		if v, ok := p.it[name]; ok {
			return v, nil
		}
		return def, nil
	}
	v, err := p.operand()
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, validation("the provided expression refers to an attribute that does not exist in the item")
	}
	return v, nil
}

// add is ADD's (and +'s) arithmetic: numbers add (absent counts as 0),
// string sets unite.
func add(a, b types.AttributeValue) (types.AttributeValue, error) {
	switch y := b.(type) {
	case *types.AttributeValueMemberN:
		x := "0"
		if a != nil {
			an, ok := a.(*types.AttributeValueMemberN)
			if !ok {
				return nil, validation("an operand in the update expression has an incorrect data type")
			}
			x = an.Value
		}
		xa, _ := new(big.Float).SetString(x)
		ya, _ := new(big.Float).SetString(y.Value)
		if xa == nil || ya == nil {
			return nil, validation("bad number %q or %q", x, y.Value)
		}
		return &types.AttributeValueMemberN{Value: new(big.Float).Add(xa, ya).Text('f', -1)}, nil
	case *types.AttributeValueMemberSS:
		set := map[string]bool{}
		if a != nil {
			as, ok := a.(*types.AttributeValueMemberSS)
			if !ok {
				return nil, validation("an operand in the update expression has an incorrect data type")
			}
			for _, s := range as.Value {
				set[s] = true
			}
		}
		for _, s := range y.Value {
			set[s] = true
		}
		out := make([]string, 0, len(set))
		for s := range set {
			out = append(out, s)
		}
		sort.Strings(out)
		return &types.AttributeValueMemberSS{Value: out}, nil
	}
	return nil, validation("ADD of %T", b)
}

// validation is DynamoDB's answer to a malformed request.
func validation(format string, args ...any) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: fmt.Sprintf(format, args...)}
}
