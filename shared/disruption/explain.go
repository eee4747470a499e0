package disruption

import (
	"fmt"
	"strings"
)

// maxListed is how many nodes an explanation names before it counts the rest.
const maxListed = 5

// explain is a command in one line: method and reason, which nodes (type,
// capacity type, zone, price), why, what replaces them, and the price per
// hour before and after.
//
//	single-node/Underutilized: replace ip-10-0-1-4 (m5.xlarge on-demand us-east-1a $0.1920/h) by 1 node (c6g.large spot, 15 options from $0.0310/h); $0.1920/h -> $0.0310/h, saves $0.1610/h
func explain(cmd Command, cands []*nodeInfo, note string) string {
	var b strings.Builder
	verb := "delete"
	if len(cmd.Replacements) > 0 {
		verb = "replace"
	}
	fmt.Fprintf(&b, "%s/%s: %s ", cmd.Method, cmd.Reason, verb)
	names := make([]string, 0, maxListed)
	for i, c := range cands {
		if i == maxListed {
			names = append(names, fmt.Sprintf("and %d more", len(cands)-maxListed))
			break
		}
		names = append(names, c.describe())
	}
	if len(cands) > 1 {
		fmt.Fprintf(&b, "%d nodes: ", len(cands))
	}
	b.WriteString(strings.Join(names, ", "))
	if len(cmd.Replacements) > 0 {
		parts := make([]string, len(cmd.Replacements))
		for i, r := range cmd.Replacements {
			first := ""
			if len(r.InstanceTypes) > 0 {
				first = r.InstanceTypes[0]
			}
			opts := "1 option"
			if len(r.InstanceTypes) != 1 {
				opts = fmt.Sprintf("%d options", len(r.InstanceTypes))
			}
			parts[i] = fmt.Sprintf("%s %s, %s from %s", first, r.CapacityType, opts, money(r.PricePerHour))
		}
		word := "node"
		if len(parts) > 1 {
			word = "nodes"
		}
		fmt.Fprintf(&b, " by %d %s (%s)", len(parts), word, strings.Join(parts, "; "))
	}
	if note != "" {
		b.WriteString(": " + note)
	}
	if cmd.Reason == ReasonUnhealthy {
		// A repair saves nothing: its pods need the capacity again.
		return b.String()
	}
	fmt.Fprintf(&b, "; %s -> %s", money(cmd.PriceBefore), money(cmd.PriceAfter))
	if s := cmd.Savings(); s >= 0 {
		fmt.Fprintf(&b, ", saves %s", money(s))
	} else {
		fmt.Fprintf(&b, ", costs %s more", money(-s))
	}
	return b.String()
}
