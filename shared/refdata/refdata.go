// Package refdata finds the team's reference files that live beside the
// repository rather than in it: the users' example YAML (shared/examples) and
// the instance-type CSV (shared/data). Tests and the catalog generator use it;
// no product code path reads these files at run time.
package refdata

import (
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// EnvVar overrides where the shared directory is.
const EnvVar = "NODEWRIGHT_SHARED"

// fallbackDir is where the shared directory sits on the team's machines.
const fallbackDir = "/work/shared"

// Dir returns the shared directory: $NODEWRIGHT_SHARED when set, else the
// first "shared" sibling of the working directory or one of its parents that
// holds examples/ and data/ (the repository's ../shared), else /work/shared.
func Dir() (string, error) {
	if d := os.Getenv(EnvVar); d != "" {
		if isShared(d) {
			return d, nil
		}
		return "", fmt.Errorf("%s=%s: no examples/ and data/ there", EnvVar, d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find shared dir: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if c := filepath.Join(d, "shared"); isShared(c) {
			return c, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if isShared(fallbackDir) {
		return fallbackDir, nil
	}
	return "", errors.New("shared reference directory not found: set " + EnvVar + " to the directory holding examples/ and data/")
}

// Examples returns the directory of the users' example YAML files.
func Examples() (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "examples"), nil
}

// Example returns the path of one example file, e.g. "inflate.yaml".
func Example(name string) (string, error) {
	d, err := Examples()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, name), nil
}

// InstanceTypesCSV returns the path of ec2-instance-types.csv.
func InstanceTypesCSV() (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "data", "ec2-instance-types.csv"), nil
}

func isShared(d string) bool {
	for _, sub := range []string{"examples", "data"} {
		if st, err := os.Stat(filepath.Join(d, sub)); err != nil || !st.IsDir() {
			return false
		}
	}
	return true
}

// InstanceRows reads ec2-instance-types.csv as one map per type, column name
// to text, for tests that check the catalog against its source.
func InstanceRows() ([]map[string]string, error) {
	path, err := InstanceTypesCSV()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read instance types: %w", err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read instance types: %w", err)
	}
	if len(recs) == 0 {
		return nil, errors.New("read instance types: empty file")
	}
	rows := make([]map[string]string, 0, len(recs)-1)
	for _, r := range recs[1:] {
		m := make(map[string]string, len(r))
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		rows = append(rows, m)
	}
	return rows, nil
}
