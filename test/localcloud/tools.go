package localcloud

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ToolsEnv names the directory `make tools` builds into.
const ToolsEnv = "NODEWRIGHT_TOOLS"

// Tool binaries the local cloud runs, all in <tools>/bin.
const (
	toolEtcd      = "etcd"
	toolAPIServer = "kube-apiserver"
	toolKCM       = "kube-controller-manager"
	toolScheduler = "kube-scheduler"
	toolKwok      = "kwok"
	toolMoto      = "moto_server"
)

// kwokStages are the kwok stage files copied beside the binaries.
var kwokStages = []string{"node-initialize.yaml", "node-heartbeat.yaml", "pod-ready.yaml", "pod-complete.yaml", "pod-delete.yaml"}

// ToolsDir is $NODEWRIGHT_TOOLS, else the default cache directory that
// `make tools` uses (~/.cache/nodewright/tools).
func ToolsDir() string {
	if d := os.Getenv(ToolsEnv); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return filepath.Join(os.TempDir(), "nodewright-tools")
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "nodewright", "tools")
}

// tools are the resolved paths of the binaries and stage files.
type tools struct {
	dir    string
	stages []string
}

func (t tools) bin(name string) string { return filepath.Join(t.dir, "bin", name) }

// findTools checks that every tool is present in dir (only moto when
// awsOnly).
func findTools(dir string, awsOnly bool) (tools, error) {
	t := tools{dir: dir}
	var missing []error
	bins := []string{toolEtcd, toolAPIServer, toolKCM, toolScheduler, toolKwok, toolMoto}
	if awsOnly {
		bins = []string{toolMoto}
	}
	for _, b := range bins {
		if st, err := os.Stat(t.bin(b)); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, fmt.Errorf("%s", t.bin(b)))
		}
	}
	for _, s := range kwokStages {
		if awsOnly {
			break
		}
		p := filepath.Join(dir, "kwok-stage", s)
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, fmt.Errorf("%s", p))
		}
		t.stages = append(t.stages, p)
	}
	if len(missing) > 0 {
		return t, fmt.Errorf("local cloud tools missing (run `make tools`; set %s to use another directory): %w", ToolsEnv, errors.Join(missing...))
	}
	return t, nil
}
