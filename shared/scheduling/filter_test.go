package scheduling_test

import (
	"slices"
	"strconv"
	"testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/refdata"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// csvRows reads the instance CSV as maps, independently of the catalog.
func csvRows(t *testing.T) []map[string]string {
	t.Helper()
	rows, err := refdata.InstanceRows()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func loadPool(t *testing.T, file string) *apis.NodePool {
	t.Helper()
	path, err := refdata.Example(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := apis.LoadFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.NodePools) != 1 {
		t.Fatalf("%s has %d NodePools", file, len(cfg.NodePools))
	}
	return cfg.NodePools[0]
}

func TestInstanceTypesForExamplePools(t *testing.T) {
	rows := csvRows(t)
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	spot := pricing.Model{Catalog: catalog.Default()}
	tests := []struct {
		file    string
		want    func(r map[string]string) bool
		samples []string
	}{
		{"nodepool-default.yaml", func(r map[string]string) bool {
			return slices.Contains([]string{"c", "m", "r"}, r["category"]) &&
				slices.Contains([]string{"medium", "large", "xlarge", "2xlarge", "4xlarge", "8xlarge"}, r["size"])
		}, []string{"c5.large", "m7g.medium", "r6i.8xlarge", "m8g.2xlarge", "c7a.4xlarge"}},
		{"getting-started.yaml", func(r map[string]string) bool {
			gen, _ := strconv.Atoi(r["generation"])
			return r["arch"] == "amd64" && (r["vcpu"] == "2" || r["vcpu"] == "4") &&
				slices.Contains([]string{"c", "m", "t"}, r["category"]) && gen > 2
		}, []string{"t3.medium", "m5.large", "c6i.xlarge", "t3a.xlarge", "m7i.large"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var want []string
			arches := map[string]bool{}
			for _, r := range rows {
				// A type is launchable only with a published on-demand price:
				// the spot model prices spot from it.
				if tt.want(r) && r["od_price_usd_hr_us_east_1"] != "" {
					want = append(want, r["name"])
					arches[r["arch"]] = true
				}
			}
			types, err := scheduling.InstanceTypesFor(loadPool(t, tt.file), catalog.Default().Types(), zones, spot)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range types {
				got = append(got, it.Name)
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("got %d types, want %d\n got %v\nwant %v", len(got), len(want), got, want)
			}
			for _, s := range tt.samples {
				if !slices.Contains(got, s) {
					t.Errorf("%s missing", s)
				}
			}
			t.Logf("%s: %d types, arches %v", tt.file, len(got), arches)
		})
	}
}

func TestInstanceTypesForDefaultPoolCoversBothArchitectures(t *testing.T) {
	types, err := scheduling.InstanceTypesFor(loadPool(t, "nodepool-default.yaml"), catalog.Default().Types(),
		[]string{"us-east-1a", "us-east-1b", "us-east-1c"}, pricing.Model{Catalog: catalog.Default()})
	if err != nil {
		t.Fatal(err)
	}
	arch := map[string]int{}
	for _, it := range types {
		arch[it.Arch]++
	}
	if arch["amd64"] == 0 || arch["arm64"] == 0 {
		t.Fatalf("arch counts %v, want both", arch)
	}
	// Without the spot model the pool still launches every on-demand type.
	od, err := scheduling.InstanceTypesFor(loadPool(t, "nodepool-default.yaml"), catalog.Default().Types(),
		[]string{"us-east-1a", "us-east-1b", "us-east-1c"}, nil)
	if err != nil || len(od) != len(types) {
		t.Fatalf("on-demand only: %d types (%v), want %d", len(od), err, len(types))
	}
}
