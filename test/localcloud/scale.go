package localcloud

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/nodewright/nodewright/test/localcloud/awsfront"
	"github.com/nodewright/nodewright/test/localcloud/nodebridge"
)

// heartbeatStages returns kwok's stage files with the node heartbeat's
// delay set to every (jitter every/2), written into dir; the other stages
// are kept.
func heartbeatStages(stages []string, every time.Duration, dir string) ([]string, error) {
	out := make([]string, len(stages))
	for i, s := range stages {
		out[i] = s
		if filepath.Base(s) != "node-heartbeat.yaml" {
			continue
		}
		b, err := os.ReadFile(s)
		if err != nil {
			return nil, fmt.Errorf("kwok heartbeat stage: %w", err)
		}
		text := string(b)
		for _, r := range []struct{ key, was, is string }{
			{"durationMilliseconds: ", "20000", fmt.Sprint(every.Milliseconds())},
			{"jitterDurationMilliseconds: ", "25000", fmt.Sprint((every / 2).Milliseconds())},
		} {
			old := r.key + r.was
			if !strings.Contains(text, old) {
				return nil, fmt.Errorf("kwok heartbeat stage %s: no %q to change", s, old)
			}
			text = strings.Replace(text, old, r.key+r.is, 1)
		}
		out[i] = filepath.Join(dir, "node-heartbeat.yaml")
		if err := os.WriteFile(out[i], []byte(text), 0o644); err != nil {
			return nil, fmt.Errorf("kwok heartbeat stage: %w", err)
		}
	}
	return out, nil
}

// CopyDir copies the regular files and directories under src into dst
// (an etcd data directory into a snapshot, and back).
func CopyDir(src, dst string) error {
	return filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return fmt.Errorf("copy %s: %w", path, err)
		}
		return out.Close()
	})
}

// RegisterNodes runs one pass of the node bridge now, with no boot delay:
// every running instance carrying the cluster tag becomes a Node (for a
// cloud started with NoNodeBridge).
func (c *Cloud) RegisterNodes(ctx context.Context) error {
	b := nodebridge.New(nodebridge.Config{
		Cluster: c.Options.Cluster, Region: c.Options.Region, KubeletVersion: KubernetesVersion,
		BootDelay: -1, EC2: ec2.NewFromConfig(awsfront.DirectConfig(c.MotoURL, c.Options.Region)),
		Kube: c.Kube, Catalog: newCatalogAdapter(c.Options.PriceSeed, c.Options.Region), Log: c.log,
	})
	return b.Reconcile(ctx)
}
