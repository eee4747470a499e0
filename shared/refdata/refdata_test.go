package refdata

import (
	"os"
	"testing"
)

func TestDirFindsExamplesAndCSV(t *testing.T) {
	csv, err := InstanceTypesCSV()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(csv); err != nil {
		t.Fatalf("instance CSV: %v", err)
	}
	ex, err := Example("inflate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ex); err != nil {
		t.Fatalf("example: %v", err)
	}
}

func TestEnvOverrideMustPointAtSharedDir(t *testing.T) {
	t.Setenv(EnvVar, t.TempDir())
	if _, err := Dir(); err == nil {
		t.Fatal("want an error for a directory without examples/ and data/")
	}
}
