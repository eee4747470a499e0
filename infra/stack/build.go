package stack

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BuildFunctions cross-compiles every function under root/functions for
// Lambda's provided.al2023 runtime on arm64 (GOOS=linux GOARCH=arm64
// CGO_ENABLED=0, -tags lambda.norpc, -trimpath, -ldflags "-s -w") with the Go
// toolchain on PATH, no Docker. Each binary is written as
// outDir/<function>/bootstrap; the returned map gives those directories. The
// build is reproducible, so an unchanged function keeps its asset hash and
// `cdk deploy` leaves it alone; Go's build cache makes a rebuild take seconds.
func BuildFunctions(root, outDir string) (map[string]string, error) {
	bins := filepath.Join(outDir, "bin")
	if err := os.MkdirAll(bins, 0o755); err != nil {
		return nil, fmt.Errorf("build functions: %w", err)
	}
	args := []string{"build", "-tags", "lambda.norpc", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", bins + string(filepath.Separator)}
	for _, fn := range FunctionNames() {
		args = append(args, "./functions/"+fn)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("build functions (go %s): %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	assets := map[string]string{}
	for _, fn := range FunctionNames() {
		dir := filepath.Join(outDir, fn)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("build functions: %w", err)
		}
		if err := os.Rename(filepath.Join(bins, fn), filepath.Join(dir, "bootstrap")); err != nil {
			return nil, fmt.Errorf("build functions: %w", err)
		}
		assets[fn] = dir
	}
	return assets, nil
}

// ModuleRoot returns the directory of the go.mod enclosing dir.
func ModuleRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", abs)
		}
	}
}
