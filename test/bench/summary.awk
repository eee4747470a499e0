# Summarises `go test -bench` output of package bench: one row per benchmark
# with the figures its b.ReportMetric calls report.
/^Benchmark/ {
	name = $1
	sub(/^BenchmarkSolveDiverse\//, "", name)
	sub(/-[0-9]+$/, "", name)
	delete m
	for (i = 3; i < NF; i += 2) m[$(i + 1)] = $i
	if (!header++) {
		printf "\n%-28s %9s %8s %7s %6s %10s %12s %8s %10s\n", "workload", "pods/s", "cpu-s", "nodes", "unsch", "price/h", "lowerbound/h", "ratio", "peak-MiB"
	}
	printf "%-28s %9.0f %8.2f %7d %6d %10.2f %12.2f %8.3f %10.1f\n", name, m["pods/s"], m["cpu-s/op"], m["nodes"], m["unschedulable"], m["price/h"], m["lowerbound/h"], m["price/lowerbound"], m["peak-heap-MiB"]
}
