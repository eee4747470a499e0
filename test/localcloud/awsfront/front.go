// Package awsfront is the local cloud's AWS endpoint: an HTTP reverse proxy
// in front of moto that adds what moto lacks and the functions need, at the
// wire level, so that the functions' SDK clients cannot tell it from AWS:
// EC2 capacity pools that run out (CreateFleet answers
// InsufficientInstanceCapacity in its Errors), throttling
// (RequestLimitExceeded), spot prices that differ by type and zone, the
// public /aws/service/... SSM parameters, the Pricing API's GetProducts and
// the zones of instance types (pricing.go), and events delivered to the
// interruption queue the way EventBridge delivers them, with the instance
// terminated or stopped after a notice (the primitives the faults of
// package cloudfault are made of). It also meters DynamoDB in read and
// write units as DynamoDB bills them (dynamometer.go), which moto does not.
package awsfront

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// PriceBook is what the front needs of the instance catalog.
type PriceBook interface {
	// OnDemandPrice is the hourly on-demand price; false when the type is
	// unknown or has no price.
	OnDemandPrice(instanceType string) (float64, bool)
	// SpotPrice is the current spot price of the type in the zone; false
	// when the type has no spot offering.
	SpotPrice(instanceType, zone string) (float64, bool)
	// TypeNames lists every instance type, sorted.
	TypeNames() []string
}

// Config configures a Front.
type Config struct {
	MotoURL  string // moto_server base URL
	Region   string
	Zones    []string // zones with spot prices
	Prices   PriceBook
	QueueURL string // interruption queue (moto URL) for EventBridge-style events
	// RecheckQueueURL is the recheck queue, which the urgent events go to
	// too ("": none).
	RecheckQueueURL string
	Account         string // account id in events; default moto's 123456789012
	Now             func() time.Time
	Log             *slog.Logger
}

// Front is the running AWS front.
type Front struct {
	cfg   Config
	moto  *url.URL
	proxy *httputil.ReverseProxy
	srv   *http.Server
	ln    net.Listener
	ec2   *ec2.Client // direct to moto: the front's own calls bypass faults
	sqs   *sqs.Client
	log   *slog.Logger

	// ddb serializes DynamoDB calls: DynamoDB is linearizable per item, but
	// moto's threaded server is not (10 concurrent conditional updates of
	// one item: 3 succeeded), so writes run one at a time and reads never
	// see half a transaction.
	ddb sync.RWMutex
	// meter prices the DynamoDB calls in units (dynamometer.go).
	meter dynamoMeter

	mu        sync.Mutex
	pools     map[PoolKey]int        // remaining capacity; absent = unlimited
	throttles map[string]int         // action -> requests still to throttle
	throttled map[string]int         // action -> requests throttled so far
	params    map[string]string      // public SSM parameters
	tokens    map[string]fleetCall   // CreateFleet ClientToken -> request and response
	zoneOf    map[string]string      // subnet id -> zone
	timers    map[*time.Timer]string // pending interruption actions
	eks       *EKSCluster            // DescribeCluster's answer
	secrets   map[string]string      // access key -> secret of credentials AssumeRole handed out
	removed   map[[2]string]bool     // (type, zone) not offered (RemoveOffering)
	rsv       reservationBook        // capacity reservations (AddReservation)
	closed    bool
	wg        sync.WaitGroup

	// placement are the placement groups by name (placement.go; under mu).
	placement map[string]placementGroup
}

// New makes a Front; Start begins serving.
func New(cfg Config) (*Front, error) {
	u, err := url.Parse(cfg.MotoURL)
	if err != nil {
		return nil, fmt.Errorf("awsfront: moto url: %w", err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Account == "" {
		cfg.Account = "123456789012"
	}
	awsCfg := DirectConfig(cfg.MotoURL, cfg.Region)
	f := &Front{
		cfg:       cfg,
		moto:      u,
		proxy:     httputil.NewSingleHostReverseProxy(u),
		ec2:       ec2.NewFromConfig(awsCfg),
		sqs:       sqs.NewFromConfig(awsCfg),
		log:       cfg.Log.With("component", "awsfront"),
		pools:     map[PoolKey]int{},
		throttles: map[string]int{},
		throttled: map[string]int{},
		params:    map[string]string{},
		rsv:       newReservationBook(),
		tokens:    map[string]fleetCall{},
		zoneOf:    map[string]string{},
		timers:    map[*time.Timer]string{},
		secrets:   map[string]string{},
	}
	return f, nil
}

// DirectConfig is an SDK config that talks to endpoint with the static
// test credentials moto accepts.
func DirectConfig(endpoint, region string) aws.Config {
	return aws.Config{
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		BaseEndpoint: aws.String(endpoint),
	}
}

// Start listens on 127.0.0.1 (a free port) and serves.
func (f *Front) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("awsfront: listen: %w", err)
	}
	f.ln = ln
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := f.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			f.log.Error("serve", "err", err)
		}
	}()
	return nil
}

// URL is the endpoint to give SDK clients.
func (f *Front) URL() string { return "http://" + f.ln.Addr().String() }

// Close stops serving and cancels pending interruption actions.
func (f *Front) Close() error {
	f.mu.Lock()
	f.closed = true
	for t := range f.timers {
		if t.Stop() {
			f.wg.Done()
		}
	}
	f.timers = map[*time.Timer]string{}
	f.mu.Unlock()
	f.wg.Wait()
	if f.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		// A request still waiting on moto (a caller that gave up on it
		// under load, say) keeps its connection active: close it rather
		// than fail the close.
		if errors.Is(err, context.DeadlineExceeded) {
			return f.srv.Close()
		}
		return err
	}
	return nil
}

// request is an incoming AWS API call, its body already read.
type request struct {
	action string     // EC2 Action or the JSON target's operation
	form   url.Values // EC2 Query parameters (nil for JSON protocols)
	target string     // X-Amz-Target, e.g. AmazonSSM.GetParameter
	body   []byte
}

func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	req := parseRequest(r, body)
	if f.takeThrottle(req.action) {
		f.log.Info("throttled", "action", req.action)
		writeThrottle(w, req)
		return
	}
	if f.handle(w, r, req) {
		return
	}
	if svc, op, ok := strings.Cut(req.target, "."); ok && strings.HasPrefix(svc, "DynamoDB_") {
		if dynamoRead(op) {
			f.ddb.RLock()
			defer f.ddb.RUnlock()
		} else {
			f.ddb.Lock()
			defer f.ddb.Unlock()
		}
		f.serveDynamo(w, r, op, body)
		return
	}
	f.forward(w, r, body)
}

// dynamoRead reports whether a DynamoDB operation only reads.
func dynamoRead(op string) bool {
	switch op {
	case "GetItem", "BatchGetItem", "Query", "Scan", "DescribeTable", "ListTables", "DescribeTimeToLive", "TransactGetItems":
		return true
	}
	return false
}

func parseRequest(r *http.Request, body []byte) request {
	req := request{body: body, target: r.Header.Get("X-Amz-Target")}
	if req.target != "" {
		_, req.action, _ = strings.Cut(req.target, ".")
		return req
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if form, err := url.ParseQuery(string(body)); err == nil {
			req.form = form
			req.action = form.Get("Action")
		}
	}
	return req
}

// handle answers the calls the front implements itself; false = forward.
func (f *Front) handle(w http.ResponseWriter, r *http.Request, req request) bool {
	if req.action == "" && f.describeCluster(w, r) {
		return true
	}
	if f.verifyPresigned(w, r) {
		return true
	}
	presignedCallerIdentity(r)
	if req.form != nil && req.action == "CreateLaunchTemplate" {
		f.rememberTemplateTarget(req.form) // and moto makes the template
	}
	switch {
	case req.form != nil && req.action == "DescribeCapacityReservations":
		f.describeCapacityReservations(w, req)
	case req.form != nil && req.action == "AssumeRole":
		f.assumeRole(w, r, req)
	case req.form != nil && req.action == "CreateFleet" && req.form.Get("Type") == "instant":
		f.createFleet(w, r, req)
	case req.form != nil && (req.action == "DescribePlacementGroups" || req.action == "CreatePlacementGroup" || req.action == "DeletePlacementGroup"):
		f.placementGroups(w, req)
	case req.form != nil && req.action == "DescribeSpotPriceHistory":
		f.describeSpotPriceHistory(w, req)
	case req.target == "AmazonSSM.GetParameter" || req.target == "AmazonSSM.GetParameters":
		return f.ssm(w, req)
	case req.target == "AWSPriceListService.GetProducts":
		f.getProducts(w, req)
	case req.form != nil && req.action == "DescribeInstanceTypeOfferings":
		return f.describeTypeOfferings(w, req)
	case req.form != nil && (req.action == "TerminateInstances" || req.action == "StopInstances"):
		f.changeState(w, r, req)
	default:
		return false
	}
	return true
}

// forward sends the request to moto unchanged.
func (f *Front) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	f.proxy.ServeHTTP(w, r)
}

// motoCall sends a (possibly rewritten) Query API body to moto with the
// original request's headers and returns the status and body.
func (f *Front) motoCall(ctx context.Context, r *http.Request, form url.Values) (int, []byte, error) {
	enc := form.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.moto.String()+r.URL.RequestURI(), strings.NewReader(enc))
	if err != nil {
		return 0, nil, err
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	req.Header.Del("Content-Length")
	req.ContentLength = int64(len(enc))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("moto %s: %w", form.Get("Action"), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("moto %s: %w", form.Get("Action"), err)
	}
	return resp.StatusCode, b, nil
}
