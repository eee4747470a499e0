package stack

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/jsii-runtime-go"

	"github.com/nodewright/nodewright/shared/metrics"
)

// metric is one of Nodewright's own metrics at cluster level (what alarms
// watch), with the statistic its definition names.
func (s *Stack) metric(name string, period awscdk.Duration) awscloudwatch.Metric {
	def, ok := metrics.Lookup(name)
	if !ok {
		panic("stack: unknown metric " + name) // a programming error, caught by every test
	}
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:     jsii.String(metrics.Namespace),
		MetricName:    jsii.String(def.Name),
		DimensionsMap: &map[string]*string{metrics.DimCluster: jsii.String(s.props.ClusterName)},
		Statistic:     jsii.String(string(def.Statistic)),
		Period:        period,
	})
}

// search is a dashboard expression that graphs one line per value of the
// metric's detail dimensions (per NodePool and capacity type, per reason...),
// whatever values the functions emit.
func (s *Stack) search(name string) awscloudwatch.MathExpression {
	def, _ := metrics.Lookup(name)
	dims := strings.Join(append([]string{metrics.Namespace, metrics.DimCluster}, def.Detail...), ",")
	expr := fmt.Sprintf(`SEARCH('{%s} MetricName="%s" %s="%s"', '%s', 60)`, dims, def.Name, metrics.DimCluster, s.props.ClusterName, def.Statistic)
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(expr),
		Label:      jsii.String(""),
		Period:     awscdk.Duration_Minutes(jsii.Number(1)),
	})
}

func graph(title string, width float64, left ...awscloudwatch.IMetric) awscloudwatch.GraphWidget {
	return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
		Title: jsii.String(title), Width: jsii.Number(width), Height: jsii.Number(6), Left: &left,
	})
}

// lambdaMetrics returns metric(fn) for every function.
func (s *Stack) lambdaMetrics(metric func(fn string) awscloudwatch.Metric) []awscloudwatch.IMetric {
	var out []awscloudwatch.IMetric
	for _, fn := range FunctionNames() {
		out = append(out, metric(fn))
	}
	return out
}

// addObservability creates the dashboard, the alarms and, if asked, the
// alarm topic.
func (s *Stack) addObservability() {
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	five := awscdk.Duration_Minutes(jsii.Number(5))
	opts := func(stat string) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Statistic: jsii.String(stat), Period: five}
	}
	dash := awscloudwatch.NewDashboard(s.Stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName: jsii.String("Nodewright-" + s.props.ClusterName),
	})
	dash.AddWidgets(awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
		Markdown: jsii.String("# Nodewright: " + s.props.ClusterName + "\nPending pods, launches, interruptions, consolidation, nodes and their price; the functions' health."),
		Width:    jsii.Number(24), Height: jsii.Number(2),
	}))
	dash.AddWidgets(
		graph("Pending pods", 6, s.metric(metrics.PendingPods, minute)),
		graph("Oldest pending pod (s)", 6, s.metric(metrics.PendingPodOldestAge, minute)),
		graph("Solve duration (ms)", 6, s.metric(metrics.SolveDuration, minute)),
		graph("Pods deferred by the solve budget", 6, s.metric(metrics.PodsDeferred, minute)),
	)
	dash.AddWidgets(
		graph("Karpenter's controller running (1: nothing launched)", 12, s.metric(metrics.KarpenterRunning, minute)),
		graph("On-demand prices missing for the region (1: stand-in figures)", 12, s.metric(metrics.OnDemandPricesMissing, minute)),
	)
	dash.AddWidgets(
		graph("Launches by NodePool and capacity type", 6, s.search(metrics.NodeClaimsLaunched)),
		graph("Launch failures by reason", 6, s.search(metrics.LaunchFailures)),
		graph("Insufficient capacity errors", 6, s.search(metrics.InsufficientCapacityErrors)),
		graph("NodePools not ready (1: left out of solves)", 6, s.search(metrics.NodePoolNotReady)),
	)
	dash.AddWidgets(
		graph("Nodes by NodePool and capacity type", 8, s.search(metrics.Nodes)),
		graph("Price per hour (USD) by NodePool and capacity type", 8, s.search(metrics.ClusterPricePerHour)),
		graph("Cluster price per hour (USD)", 8, awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String(metrics.Namespace), MetricName: jsii.String(metrics.ClusterPricePerHour),
			DimensionsMap: &map[string]*string{metrics.DimCluster: jsii.String(s.props.ClusterName)},
			Statistic:     jsii.String("Sum"), Period: minute, Label: jsii.String("all NodePools"),
		})),
	)
	dash.AddWidgets(
		graph("Time to registration (s)", 8, s.metric(metrics.RegistrationDuration, minute)),
		graph("Interruptions by kind", 8, s.search(metrics.Interruptions)),
		graph("Interruption: message to replacement / to drained (s)", 8,
			s.metric(metrics.InterruptionToReplacement, minute), s.metric(metrics.InterruptionToDrained, minute)),
	)
	dash.AddWidgets(
		graph("Pods evicted by reason", 8, s.search(metrics.PodsEvicted)),
		graph("Interruption messages failed", 8, s.metric(metrics.InterruptionMessagesFailed, minute)),
		graph("Consolidation candidates", 8, s.metric(metrics.ConsolidationCandidates, minute)),
	)
	dash.AddWidgets(
		graph("Consolidation actions by method and reason", 6, s.search(metrics.ConsolidationActions)),
		graph("Nodes removed by consolidation", 6, s.metric(metrics.ConsolidationNodesRemoved, minute)),
		graph("Price per hour saved by consolidation (USD)", 6, s.metric(metrics.ConsolidationSavings, minute)),
		graph("Consolidation actions abandoned by cause", 6, s.search(metrics.ConsolidationAbandoned)),
	)
	dash.AddWidgets(
		graph("Function errors", 6, s.lambdaMetrics(func(fn string) awscloudwatch.Metric { return s.functions[fn].MetricErrors(opts("Sum")) })...),
		graph("Function duration p99 (ms)", 6, s.lambdaMetrics(func(fn string) awscloudwatch.Metric { return s.functions[fn].MetricDuration(opts("p99")) })...),
		graph("Function throttles", 6, s.lambdaMetrics(func(fn string) awscloudwatch.Metric { return s.functions[fn].MetricThrottles(opts("Sum")) })...),
		graph("Function invocations", 6, s.lambdaMetrics(func(fn string) awscloudwatch.Metric { return s.functions[fn].MetricInvocations(opts("Sum")) })...),
	)
	dash.AddWidgets(
		graph("Interruption DLQ depth", 12, s.dlq.MetricApproximateNumberOfMessagesVisible(opts("Maximum"))),
		graph("Interruption queue: oldest message age (s)", 12, s.queue.MetricApproximateAgeOfOldestMessage(opts("Maximum"))),
	)
	s.addAlarms(s.alarmAction())
}

// alarmAction returns the SNS action for alarms, or nil.
//
// A created topic is encrypted with a customer-managed key: CloudWatch
// cannot publish to a topic under the AWS-managed aws/sns key, so the key's
// policy lets CloudWatch use it (a key costs $1/month, which is why the topic
// is opt-in).
func (s *Stack) alarmAction() awscloudwatch.IAlarmAction {
	var topic awssns.ITopic
	switch {
	case s.props.AlarmTopicArn != "":
		topic = awssns.Topic_FromTopicArn(s.Stack, jsii.String("AlarmTopic"), jsii.String(s.props.AlarmTopicArn))
	case s.props.AlarmEmail != "":
		key := awskms.NewKey(s.Stack, jsii.String("AlarmTopicKey"), &awskms.KeyProps{
			Description:       jsii.String("Nodewright alarm topic (" + s.props.ClusterName + ")"),
			EnableKeyRotation: jsii.Bool(true),
			RemovalPolicy:     awscdk.RemovalPolicy_DESTROY,
		})
		key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("AllowCloudWatchAlarms"),
			Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
			Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey*"),
			Resources:  jsii.Strings("*"),
			Conditions: &map[string]any{"StringEquals": map[string]any{"aws:SourceAccount": s.Account()}},
		}), jsii.Bool(false))
		t := awssns.NewTopic(s.Stack, jsii.String("AlarmTopic"), &awssns.TopicProps{
			DisplayName: jsii.String("Nodewright alarms (" + s.props.ClusterName + ")"),
			MasterKey:   key,
			EnforceSSL:  jsii.Bool(true),
		})
		t.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(s.props.AlarmEmail), nil))
		topic = t
	default:
		return nil
	}
	return awscloudwatchactions.NewSnsAction(topic)
}

// addAlarms creates the alarms. Missing data is not breaching: the custom
// metrics are only emitted when there is something to count.
func (s *Stack) addAlarms(action awscloudwatch.IAlarmAction) {
	five := awscdk.Duration_Minutes(jsii.Number(5))
	alarm := func(id, desc string, m awscloudwatch.IMetric, threshold float64, op awscloudwatch.ComparisonOperator, periods, datapoints float64) {
		a := awscloudwatch.NewAlarm(s.Stack, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmName:          jsii.String("Nodewright-" + s.props.ClusterName + "-" + id),
			AlarmDescription:   jsii.String(desc),
			Metric:             m,
			Threshold:          jsii.Number(threshold),
			ComparisonOperator: op,
			EvaluationPeriods:  jsii.Number(periods),
			DatapointsToAlarm:  jsii.Number(datapoints),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		if action != nil {
			a.AddAlarmAction(action)
			a.AddOkAction(action)
		}
	}
	gte := awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD
	alarm("InterruptionDLQNotEmpty", "interruption events failed 3 times and wait in the DLQ: inspect and redrive",
		s.dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: five}), 1, gte, 1, 1)
	for _, fn := range FunctionNames() {
		f := s.functions[fn]
		alarm(title(fn)+"Errors", "the "+fn+" function failed (see its log group)",
			f.MetricErrors(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five}), s.props.FunctionErrorThreshold, gte, 1, 1)
		alarm(title(fn)+"Throttles", "the "+fn+" function hit its reserved concurrency",
			f.MetricThrottles(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five}), 1, gte, 1, 1)
	}
	alarm("LaunchFailures", fmt.Sprintf("%g or more launches failed within 15 minutes", s.props.LaunchFailureThreshold),
		s.metric(metrics.LaunchFailures, awscdk.Duration_Minutes(jsii.Number(15))), s.props.LaunchFailureThreshold, gte, 1, 1)
	alarm("PendingPodsTooOld", fmt.Sprintf("a pod has been pending for more than %s in 3 of the last 5 minutes", s.props.PendingPodAgeThreshold),
		s.metric(metrics.PendingPodOldestAge, awscdk.Duration_Minutes(jsii.Number(1))), s.props.PendingPodAgeThreshold.Seconds(),
		awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD, 5, 3)
}
