# Summarises `go test -bench` output of package bench: a table of the cost
# suite's shapes (price, lower bound, their ratio, the best one-type node
# group, Karpenter's recorded price) and one of the diverse workloads
# (throughput, plan, heap), and one of the solve at scale (Prepare and
# Solve on a cluster of 100 to 5,000 nodes), one row per benchmark, with the
# figures its b.ReportMetric calls report.
/^Benchmark/ {
	name = $1
	sub(/-[0-9]+$/, "", name)
	delete m
	for (i = 3; i < NF; i += 2) m[$(i + 1)] = $i
	if (name ~ /^BenchmarkCostShapes\//) {
		sub(/^BenchmarkCostShapes\//, "", name)
		# Prices come in micro-dollars (exact); each is rounded the same way,
		# so no price prints below one it is not below.
		shapes[++ns] = sprintf("%-46s %9.4f %9.4f %7.3f %10.4f %10.4f %8.1f %8.2f", name, m["price-u$/h"] / 1e6, m["lowerbound-u$/h"] / 1e6, m["price/lowerbound"], m["nodegroup-u$/h"] / 1e6, m["karpenter-u$/h"] / 1e6, m["cpu-s/op"] * 1000, m["karpenter-s"])
		next
	}
	if (name ~ /^BenchmarkSolveAtScale\//) {
		sub(/^BenchmarkSolveAtScale\//, "", name)
		scale[++nsc] = sprintf("%-42s %8.3f %8.3f %10.1f %10.1f %10d %7d %9d %6d", name, m["wall-s"], m["cpu-s/op"], m["peak-heap-MiB"], m["B/op"] / 1048576, m["allocs/op"], m["nodes"], m["on-existing"], m["unschedulable"])
		next
	}
	sub(/^BenchmarkSolveDiverse\//, "", name)
	diverse[++nd] = sprintf("%-40s %9.0f %8.2f %7d %6d %8d %10.2f %12.2f %8.3f %10.1f", name, m["pods/s"], m["cpu-s/op"], m["nodes"], m["unschedulable"], m["deferred"], m["price/h"], m["lowerbound/h"], m["price/lowerbound"], m["peak-heap-MiB"])
}
END {
	if (nsc) {
		printf "\n%-42s %8s %8s %10s %10s %10s %7s %9s %6s\n", "cluster (+1,000 pending unless named)", "wall-s", "cpu-s", "peak-MiB", "alloc-MiB", "allocs", "nodes", "existing", "unsch"
		for (i = 1; i <= nsc; i++) print scale[i]
	}
	if (ns) {
		printf "\n%-46s %9s %9s %7s %10s %10s %8s %8s\n", "shape", "price/h", "bound/h", "ratio", "nodegroup", "karpenter", "cpu-ms", "k-sec"
		for (i = 1; i <= ns; i++) print shapes[i]
	}
	if (nd) {
		printf "\n%-40s %9s %8s %7s %6s %8s %10s %12s %8s %10s\n", "workload", "pods/s", "cpu-s", "nodes", "unsch", "deferred", "price/h", "lowerbound/h", "ratio", "peak-MiB"
		for (i = 1; i <= nd; i++) print diverse[i]
	}
}
