// Command localcloud brings the local cloud up for a developer (`make
// cloud`): it prints the kubeconfig and the endpoints and runs until
// interrupted, then stops every process.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nodewright/nodewright/test/localcloud"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "localcloud:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	start := time.Now()
	lc, err := localcloud.Start(ctx, localcloud.Options{Log: log})
	if err != nil {
		return err
	}
	defer lc.Close()
	_, rss := lc.RSS()
	fmt.Printf(`local cloud up in %s (%d MiB resident)
  cluster      %s (Kubernetes %s)
  kubeconfig   export KUBECONFIG=%s
  API server   %s
  AWS endpoint %s   (region %s, any access key; moto itself at %s)
  subnets      %v
  table        %s
  queue        %s
  logs         %s/logs
Ctrl-C stops everything.
`, time.Since(start).Round(10*time.Millisecond), rss>>20, lc.Cluster.Name, localcloud.KubernetesVersion, lc.Kubeconfig,
		lc.Cluster.Endpoint, lc.AWS.URL(), lc.Options.Region, lc.MotoURL, lc.Seeded.Subnets, lc.Seeded.TableName,
		lc.Seeded.QueueURL, lc.StateDir)
	<-ctx.Done()
	fmt.Println("stopping the local cloud")
	return nil
}
