package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"

	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/pricing"
)

const pricesUsage = `Usage: nodewright prices [-region REGION] [-o FILE] [flags]

Reads a region's on-demand prices (the Pricing API's GetProducts) and the
zones each instance type is offered in (EC2 DescribeInstanceTypeOfferings)
and writes them as JSON, for 'nodewright plan -region REGION -prices FILE'
where AWS cannot be reached. Needs pricing:GetProducts and
ec2:DescribeInstanceTypeOfferings.

Flags:
`

// pricesDeps reach AWS for region figures (stand-ins in tests; a zero
// cli never reaches AWS: plan then has only the shipped and file figures).
type pricesDeps struct {
	// read reads the region's figures from AWS.
	read func(ctx context.Context, af awsFlags, region string) (*pricing.Figures, error)
	// region is the AWS configuration's region ("" when none).
	region func(ctx context.Context, af awsFlags) string
}

// awsFlags say how to reach AWS for figures.
type awsFlags struct {
	endpoint, profile string
	timeout           time.Duration
}

func (af *awsFlags) registerAWS(fs *flag.FlagSet) {
	fs.StringVar(&af.endpoint, "endpoint-url", "", "send AWS calls to `URL` (default: $AWS_ENDPOINT_URL, else AWS)")
	fs.StringVar(&af.profile, "profile", "", "AWS shared-config `PROFILE` (default: $AWS_PROFILE)")
	fs.DurationVar(&af.timeout, "timeout", 2*time.Minute, "give up reading AWS after this long")
}

func awsPricesDeps() pricesDeps {
	return pricesDeps{read: readAWSFigures, region: awsRegion}
}

// readAWSFigures reads both parts of the region's figures; either failing
// is an error.
func readAWSFigures(ctx context.Context, af awsFlags, region string) (*pricing.Figures, error) {
	cfg, err := awsConfig(ctx, &targetFlags{region: region, endpoint: af.endpoint, profile: af.profile})
	if err != nil {
		return nil, err
	}
	pc := awspricing.NewFromConfig(cfg, func(o *awspricing.Options) { o.Region = pricing.PricingEndpointRegion(region) })
	return pricing.Read(ctx, pc, ec2.NewFromConfig(cfg), region, time.Now)
}

// awsRegion is the region of the AWS configuration (environment, shared
// files), "" when none is set.
func awsRegion(ctx context.Context, af awsFlags) string {
	var opts []func(*config.LoadOptions) error
	if af.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(af.profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return ""
	}
	return cfg.Region
}

// prices runs `nodewright prices`.
func (c cli) prices(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("nodewright prices", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), pricesUsage)
		fs.PrintDefaults()
	}
	var region, out string
	var af awsFlags
	fs.StringVar(&region, "region", "", "AWS `REGION` whose figures to read (default: the AWS configuration's)")
	fs.StringVar(&out, "o", "-", "write the figures to `FILE` (- is stdout)")
	af.registerAWS(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "nodewright prices: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if c.pricesDeps.read == nil {
		fmt.Fprintln(stderr, "nodewright prices: AWS cannot be reached from here")
		return exitError
	}
	ctx, cancel := context.WithTimeout(context.Background(), af.timeout)
	defer cancel()
	if region == "" && c.pricesDeps.region != nil {
		region = c.pricesDeps.region(ctx, af)
	}
	if region == "" {
		fmt.Fprintln(stderr, "nodewright prices: no region: pass -region (e.g. -region eu-west-1) or set AWS_REGION")
		return exitUsage
	}
	f, err := c.pricesDeps.read(ctx, af, region)
	if err != nil {
		fmt.Fprintf(stderr, "nodewright prices: %s: %v\n", region, err)
		return exitError
	}
	data, err := f.Encode()
	if err != nil {
		fmt.Fprintf(stderr, "nodewright prices: %v\n", err)
		return exitError
	}
	data = append(data, '\n')
	if out == "-" {
		_, err = stdout.Write(data)
	} else {
		err = os.WriteFile(out, data, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "nodewright prices: write: %v\n", err)
		return exitError
	}
	if out != "-" {
		fmt.Fprintf(stderr, "nodewright prices: %s: %d on-demand prices, %d instance types placed in zones, written to %s\n", region, len(f.OnDemand), len(f.Zones), out)
	}
	return exitOK
}

// planFigures are the region's figures for a plan: from the file when one
// is given (it must be the region's), else the shipped table for its
// region, else AWS where it can be reached; never another region's.
func (c cli) planFigures(region, file string, af awsFlags) (pricing.Choice, error) {
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return pricing.Choice{}, fmt.Errorf("--prices: %w", err)
		}
		f, err := pricing.DecodeFigures(data)
		if err != nil {
			return pricing.Choice{}, fmt.Errorf("--prices %s: %w", file, err)
		}
		if f.Region != region {
			return pricing.Choice{}, fmt.Errorf("--prices %s holds the figures of %s, not of %s: write %s's with 'nodewright prices -region %s -o FILE'", file, f.Region, region, region, region)
		}
		if len(f.OnDemand) == 0 {
			return pricing.Choice{}, fmt.Errorf("--prices %s holds no on-demand prices for %s", file, region)
		}
		return pricing.Choose(region, f), nil
	}
	if region == catalog.ShippedPricesRegion {
		return pricing.Choose(region, nil), nil
	}
	noFigures := fmt.Sprintf("region %s has no figures here: the built-in prices are %s's only. Pass -prices FILE, written where AWS credentials allow with 'nodewright prices -region %s -o FILE'",
		region, catalog.ShippedPricesRegion, region)
	if c.pricesDeps.read == nil {
		return pricing.Choice{}, errors.New(noFigures)
	}
	ctx, cancel := context.WithTimeout(context.Background(), af.timeout)
	defer cancel()
	f, err := c.pricesDeps.read(ctx, af, region)
	if err != nil {
		return pricing.Choice{}, fmt.Errorf("%s (the Pricing API could not be read: %v)", noFigures, err)
	}
	return pricing.Choose(region, f), nil
}
