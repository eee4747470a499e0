// Command catalog-gen writes shared/catalog/zz_generated_types.tsv.gz from the
// team's instance CSV and AWS's DescribeInstanceTypes data (as moto ships it).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/nodewright/nodewright/shared/catalog/internal/gen"
	"github.com/nodewright/nodewright/shared/refdata"
)

func main() {
	csvPath := flag.String("csv", "", "ec2-instance-types.csv (default: the shared data directory)")
	describe := flag.String("describe", "", "instance_types.json.gz (default: the installed moto's)")
	out := flag.String("out", "zz_generated_types.tsv.gz", "output file (gzipped)")
	features := flag.Bool("features", false, "write the type features (Go source) from the describe data alone, to -out")
	flag.Parse()
	run := run
	if *features {
		run = runFeatures
	}
	if err := run(*csvPath, *describe, *out); err != nil {
		fmt.Fprintln(os.Stderr, "catalog-gen:", err)
		os.Exit(1)
	}
}

func run(csvPath, describe, out string) error {
	var err error
	if csvPath == "" {
		if csvPath, err = refdata.InstanceTypesCSV(); err != nil {
			return err
		}
	}
	if describe == "" {
		if describe, err = gen.MotoDescribePath(); err != nil {
			return err
		}
	}
	table, err := gen.Generate(csvPath, describe)
	if err != nil {
		return err
	}
	src, err := gen.Compress(table)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	fmt.Printf("catalog-gen: wrote %s (%d bytes) from %s and %s\n", out, len(src), csvPath, describe)
	return nil
}

// runFeatures writes zz_generated_features.go from the describe data.
func runFeatures(_, describe, out string) error {
	var err error
	if describe == "" {
		if describe, err = gen.MotoDescribePath(); err != nil {
			return err
		}
	}
	src, err := gen.Features(describe)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	fmt.Printf("catalog-gen: wrote %s from %s\n", out, describe)
	return nil
}
