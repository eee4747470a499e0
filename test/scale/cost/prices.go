package cost

// Prices are unit prices in USD, with the day they were read and where.
type Prices struct {
	Region string
	Date   string // when the prices were read (YYYY-MM-DD)
	Source string

	LambdaRequest  float64 // per request
	LambdaGBSecond float64 // per GB-second, arm64

	DynamoRead           float64 // per read request unit, on-demand
	DynamoWrite          float64 // per write request unit, on-demand
	DynamoStorageGBMonth float64 // Standard table class

	MetricMonth         float64 // per custom metric (first 10,000)
	AlarmMonth          float64 // per standard-resolution alarm metric
	DashboardMonth      float64 // per dashboard
	GetMetricDataMetric float64 // per metric requested
	LogIngestGB         float64 // Standard log class
	LogStorageGBMonth   float64 // archived (compressed) logs
}

// USEast1 are us-east-1's public prices, first tiers, without free tiers.
// DynamoDB's on-demand throughput is the price after the cut of
// 2024-11-01 (half the earlier $1.25 and $0.25 per million).
var USEast1 = Prices{
	Region: "us-east-1",
	Date:   "2026-11-27",
	Source: "aws.amazon.com/lambda/pricing, /dynamodb/pricing/on-demand and /cloudwatch/pricing, " +
		"as quoted by stored copies read on 2026-11-27 (cloudburn.io's CloudWatch guide of 2026-02, " +
		"airbyte.com's DynamoDB guide of 2025-07, cloudchipr.com's Lambda guide)",

	LambdaRequest:  0.20 / 1e6,
	LambdaGBSecond: 0.0000133334,

	DynamoRead:           0.125 / 1e6,
	DynamoWrite:          0.625 / 1e6,
	DynamoStorageGBMonth: 0.25,

	MetricMonth:         0.30,
	AlarmMonth:          0.10,
	DashboardMonth:      3.00,
	GetMetricDataMetric: 0.01 / 1000,
	LogIngestGB:         0.50,
	LogStorageGBMonth:   0.03,
}
