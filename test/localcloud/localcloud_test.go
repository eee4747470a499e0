package localcloud

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestStartWithoutToolsSaysRunMakeTools(t *testing.T) {
	_, err := Start(context.Background(), Options{ToolsDir: t.TempDir(), StateDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "make tools") || !strings.Contains(err.Error(), "kube-apiserver") {
		t.Fatalf("err = %v, want it to name the missing tools and `make tools`", err)
	}
}

func TestToolsDir(t *testing.T) {
	t.Setenv(ToolsEnv, "/opt/tools")
	if got := ToolsDir(); got != "/opt/tools" {
		t.Errorf("ToolsDir with %s = %q", ToolsEnv, got)
	}
	t.Setenv(ToolsEnv, "")
	t.Setenv("XDG_CACHE_HOME", "/c")
	if got := ToolsDir(); got != filepath.Join("/c", "nodewright", "tools") {
		t.Errorf("ToolsDir = %q", got)
	}
}

func TestNamesAndParameters(t *testing.T) {
	n := NamesFor("prod")
	if n.Table != "nodewright-prod-state" || n.InterruptionQueue != "nodewright-prod-interruption" || n.TableTTLAttribute != "expiresAt" {
		t.Errorf("names %+v", n)
	}
	if got := AMIParameter(minorOf(KubernetesVersion), "arm64", "standard"); got != "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/arm64/standard/recommended/image_id" {
		t.Errorf("AMIParameter = %q", got)
	}
}
