package interruption_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/nodewright/nodewright/test/harness"
	"github.com/nodewright/nodewright/test/localcloud"
)

// One local cloud serves the package. The tests that need the cloud to
// themselves (one holds the provision lease, one keeps a 3 s heartbeat)
// run first, one at a time; the rest run in parallel, each with its own NodePools, instance types, apps and
// interruption queues (post sorts what EventBridge delivers to the seeded
// queue into them by instance).
var suite *harness.Suite

// parallel is how many tests run at once when -test.parallel is not
// given: they spend their time waiting on the local cloud, not on a CPU,
// so go test's default (GOMAXPROCS) would leave most of them queued.
const parallel = 16

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", fmt.Sprint(parallel)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(harness.Main(m, localcloud.Options{BootDelay: time.Second, InstallCRDs: true},
		func(s *harness.Suite) { suite = s }, "nodepool-default.yaml", "ec2nodeclass-default.yaml"))
}

// post is the package's sorting office: the local EventBridge delivers
// every event (the faults the tests inject, the state changes of the
// instances their functions terminate) to the one seeded interruption
// queue; post moves each message from there to the queues of the test
// that owns the instance it names. A message naming no owned instance
// (the launch of a replacement, an instance of a test that has ended) is
// nobody's and is deleted.
var post = &office{owners: map[string]string{}}

type office struct {
	sorting sync.Mutex // one sort at a time: when sort returns, what was on the seeded queue is delivered
	mu      sync.Mutex
	owners  map[string]string // instance -> queue URL
}

// own sends the messages that name instance to queue url until the test
// ends (its queues are deleted then).
func (o *office) own(t *testing.T, instance, url string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.owners[instance] = url
	t.Cleanup(func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.owners, instance)
	})
}

// deliver sends body to the queue of the first owned instance it names,
// if any, and says which. It holds the owners while it sends, so that a
// test's queues are not deleted under it.
func (o *office) deliver(ctx context.Context, client *sqs.Client, body *string) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id, url := range o.owners {
		if strings.Contains(aws.ToString(body), id) {
			if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: body}); err != nil {
				return "", fmt.Errorf("deliver to %s: %w", url, err)
			}
			return url, nil
		}
	}
	return "", nil
}

// sort empties the seeded queue into the owners' queues; it returns how
// many messages it delivered to url.
func (o *office) sort(ctx context.Context, url string) (int, error) {
	o.sorting.Lock()
	defer o.sorting.Unlock()
	client := sqs.NewFromConfig(suite.LC.AWSConfig())
	seeded := aws.String(suite.LC.Seeded.QueueURL)
	delivered := 0
	for {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: seeded, MaxNumberOfMessages: 10, VisibilityTimeout: 30})
		if err != nil {
			return delivered, fmt.Errorf("sort the seeded queue: %w", err)
		}
		if len(out.Messages) == 0 {
			return delivered, nil
		}
		for _, m := range out.Messages {
			to, err := o.deliver(ctx, client, m.Body)
			if err != nil {
				return delivered, err
			}
			if to == url {
				delivered++
			}
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: seeded, ReceiptHandle: m.ReceiptHandle}); err != nil {
				return delivered, fmt.Errorf("sort the seeded queue: %w", err)
			}
		}
	}
}

// newHarness is the functions wired for one test, with interruption
// queues of its own named after name.
func newHarness(t *testing.T, name string) *harness.Harness {
	t.Helper()
	return suite.Harness(t, harness.Options{Queues: suite.OwnQueues(t, name)})
}

// drain hands the test's messages to its interruption function as Lambda's
// event source does (harness.DrainQueue), those EventBridge delivered
// included: it sorts the seeded queue before each pass, and returns when
// neither the sort nor the pass found anything.
func drain(ctx context.Context, h *harness.Harness, visibility time.Duration) (handled, failed int, err error) {
	for {
		n, err := post.sort(ctx, h.Queues().URL)
		if err != nil {
			return handled, failed, err
		}
		hd, fl, err := h.DrainQueue(ctx, visibility)
		handled, failed = handled+hd, failed+fl
		if err != nil || n+hd+fl == 0 {
			return handled, failed, err
		}
	}
}
