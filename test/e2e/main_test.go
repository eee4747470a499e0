package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nodewright/nodewright/test/localcloud"
)

// childEnv makes the test binary act as the owner of a local cloud that
// TestKilledOwnerLeavesNothing kills: it starts one, prints the pids and
// waits to be killed.
const childEnv = "NODEWRIGHT_E2E_CLOUD_OWNER"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(ownCloud())
	}
	os.Exit(m.Run())
}

func ownCloud() int {
	lc, err := localcloud.Start(context.Background(), localcloud.Options{StateDir: os.Getenv(childEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "owner:", err)
		return 1
	}
	for _, p := range lc.Processes() {
		fmt.Printf("pid %d %s\n", p.Pid, p.Name)
	}
	fmt.Println("ready")
	time.Sleep(10 * time.Minute) // killed by the test long before
	lc.Close()
	return 0
}
