package stack

import (
	"slices"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogsdestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/trigger"
)

// interruptionQueueVisibility is the queue's visibility timeout: the
// interruption function's timeout and a margin (see addQueue).
const interruptionQueueVisibility = interruptionTimeout + time.Minute

// addQueue creates the interruption queue and its DLQ.
//
// SQS-managed encryption (SSE-SQS): EventBridge can send to it without a
// customer KMS key policy (it cannot use the AWS-managed aws/sqs key).
//
// Timing. The handler sets names.InterruptionRetryVisibility (30 s) on each
// message it fails with ChangeMessageVisibility, so a failed spot warning
// is retried within a minute. The queue's own visibility timeout only
// brings back the messages of an invocation that crashed or timed out:
// Lambda refuses an SQS trigger whose visibility is below the function's
// timeout, so it is that timeout plus a minute. Retention 1 hour: an
// interruption event older than that describes an instance long gone, and
// it is at least (names.InterruptionMaxReceives + 1) times the queue's
// visibility, so a message that always fails, or always crashes its
// invocation, reaches the DLQ before it expires (TestInterruptionQueueTiming
// holds the template to this). The DLQ keeps failures 14 days for
// inspection (SQS counts a dead letter's age from its first enqueue).
// infra/queueattrs keeps these attributes as the local cloud seeds them.
//
// The recheck queue. The urgent events (trigger.RecheckDetailTypes) are
// delivered to it too, and it hands them out names.InterruptionRecheckDelay
// later (its DelaySeconds): an invocation that dies before its first call
// leaves its batch to the main queue's visibility timeout, past a spot
// warning's two minutes, and the recheck delivery handles the event in
// time instead (a recheck the first delivery is on is acknowledged at
// once: shared/interruption's recheck.go). It is the main queue's twin
// otherwise: the same encryption, retention, visibility, DLQ and receive
// limit.
func (s *Stack) addQueue() {
	s.dlq = awssqs.NewQueue(s.Stack, jsii.String("InterruptionDLQ"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	props := func(delay time.Duration) *awssqs.QueueProps {
		return &awssqs.QueueProps{
			Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:        jsii.Bool(true),
			RetentionPeriod:   awscdk.Duration_Hours(jsii.Number(1)),
			VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(interruptionQueueVisibility.Seconds())),
			DeliveryDelay:     awscdk.Duration_Seconds(jsii.Number(delay.Seconds())),
			DeadLetterQueue: &awssqs.DeadLetterQueue{
				Queue:           s.dlq,
				MaxReceiveCount: jsii.Number(names.InterruptionMaxReceives),
			},
		}
	}
	main := props(0)
	main.DeliveryDelay = nil
	s.queue = awssqs.NewQueue(s.Stack, jsii.String("InterruptionQueue"), main)
	s.recheck = awssqs.NewQueue(s.Stack, jsii.String("RecheckQueue"), props(names.InterruptionRecheckDelay))
}

// urgent reports whether a rule's events also go to the recheck queue.
func urgent(source, detailType string) bool {
	return source == trigger.EC2Source && slices.Contains(trigger.RecheckDetailTypes(), detailType)
}

// interruptionRules are the EventBridge rules that feed the queue: rule ID,
// source, detail type, and extra detail filters.
func interruptionRules() []struct {
	ID, Source, DetailType string
	Detail                 map[string]any
} {
	return []struct {
		ID, Source, DetailType string
		Detail                 map[string]any
	}{
		{"SpotInterruptionRule", trigger.EC2Source, trigger.DetailTypeSpotInterruption, nil},
		{"RebalanceRule", trigger.EC2Source, trigger.DetailTypeRebalanceRecommendation, nil},
		{"InstanceStateChangeRule", trigger.EC2Source, trigger.DetailTypeStateChange, nil},
		{"ScheduledChangeRule", trigger.HealthSource, trigger.DetailTypeHealth, map[string]any{
			"service":           []string{trigger.HealthServiceEC2},
			"eventTypeCategory": []string{trigger.HealthCategoryScheduledChange},
		}},
		{"CapacityReservationInterruptionRule", trigger.EC2Source, trigger.DetailTypeCapacityReservationInterruption, nil},
	}
}

// addTriggers wires every trigger to its function: the interruption rules
// and queue, the two schedules, and the audit log subscription.
func (s *Stack) addTriggers() {
	var ruleArns, recheckArns []*string
	for _, r := range interruptionRules() {
		pattern := &awsevents.EventPattern{
			Source:     jsii.Strings(r.Source),
			DetailType: jsii.Strings(r.DetailType),
		}
		if r.Detail != nil {
			d := map[string]any{}
			for k, v := range r.Detail {
				d[k] = v
			}
			pattern.Detail = &d
		}
		rule := awsevents.NewRule(s.Stack, jsii.String(r.ID), &awsevents.RuleProps{
			Description:  jsii.String("Nodewright: " + r.DetailType + " to the interruption queue"),
			EventPattern: pattern,
		})
		rule.AddTarget(awseventstargets.NewSqsQueue(s.queue, nil))
		ruleArns = append(ruleArns, rule.RuleArn())
		if urgent(r.Source, r.DetailType) {
			rule.AddTarget(awseventstargets.NewSqsQueue(s.recheck, nil))
			recheckArns = append(recheckArns, rule.RuleArn())
		}
	}
	restrictQueueSenders(s.queue, "OnlyNodewrightRulesMaySend", ruleArns)
	restrictQueueSenders(s.recheck, "OnlyNodewrightRulesMaySend", recheckArns)

	// Both queues feed the function the same way (it tells a recheck batch
	// by its event source ARN); each event source grants the function's
	// role the consumption of its queue, ChangeMessageVisibility included
	// (the heartbeat).
	for _, q := range []awssqs.Queue{s.queue, s.recheck} {
		s.functions[FnInterruption].AddEventSource(awslambdaeventsources.NewSqsEventSource(q, &awslambdaeventsources.SqsEventSourceProps{
			BatchSize:               jsii.Number(10),
			MaxBatchingWindow:       awscdk.Duration_Seconds(jsii.Number(0)),
			ReportBatchItemFailures: jsii.Bool(true),
			MaxConcurrency:          s.esmConcurrency(),
		}))
	}

	s.schedule("ProvisionSweep", s.props.SweepSchedule, FnProvision, "provision sweep: finds pending pods every trigger may have missed")
	s.schedule("ConsolidationSchedule", s.props.ConsolidationSchedule, FnConsolidation, "consolidation: empty, underutilized, expired and drifted nodes")

	if !s.props.SkipAuditLogTrigger {
		s.addAuditLogSubscription()
	}
}

// restrictQueueSenders adds to q an explicit deny (sid) of sqs:SendMessage
// for every request whose aws:SourceArn is not one of ruleArns, on top of
// the per-rule allow statements the SQS targets add (principal
// events.amazonaws.com, condition aws:SourceArn = the rule, whose ARN names
// this account). The deny makes "only EventBridge delivering our rules"
// hold even if someone later adds a broader allow or an IAM policy
// granting sqs:SendMessage.
func restrictQueueSenders(q awssqs.Queue, sid string, ruleArns []*string) {
	q.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String(sid),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("sqs:SendMessage"),
		Resources:  &[]*string{q.QueueArn()},
		Conditions: &map[string]any{
			"ArnNotEquals": map[string]any{"aws:SourceArn": ruleArns},
		},
	}))
}

// schedule adds an EventBridge schedule invoking fn. No retries and a
// one-minute maximum event age: the next tick is as good as a retry.
func (s *Stack) schedule(id, expr, fn, what string) {
	rule := awsevents.NewRule(s.Stack, jsii.String(id), &awsevents.RuleProps{
		Description: jsii.String("Nodewright " + what),
		Schedule:    awsevents.Schedule_Expression(jsii.String(expr)),
	})
	rule.AddTarget(awseventstargets.NewLambdaFunction(s.functions[fn], &awseventstargets.LambdaFunctionProps{
		RetryAttempts: jsii.Number(0),
		MaxEventAge:   awscdk.Duration_Minutes(jsii.Number(1)),
	}))
}

// AuditLogGroupName is the control-plane log group of an EKS cluster.
func AuditLogGroupName(cluster string) string { return "/aws/eks/" + cluster + "/cluster" }

// AuditFilterPattern matches the audit events that can mean a new pending
// pod: a pod created, or a pod's status written (kube-scheduler patches
// PodScheduled=False/Unschedulable there), once the request completed.
func AuditFilterPattern() awslogs.IFilterPattern {
	str := func(field, value string) awslogs.JsonPattern {
		return awslogs.FilterPattern_StringValue(jsii.String(field), jsii.String("="), jsii.String(value))
	}
	return awslogs.FilterPattern_All(
		str("$.objectRef.resource", "pods"),
		str("$.stage", "ResponseComplete"),
		awslogs.FilterPattern_Any(
			awslogs.FilterPattern_All(str("$.verb", "create"), awslogs.FilterPattern_NotExists(jsii.String("$.objectRef.subresource"))),
			awslogs.FilterPattern_All(
				awslogs.FilterPattern_Any(str("$.verb", "patch"), str("$.verb", "update")),
				str("$.objectRef.subresource", "status"),
			),
		),
	)
}

// addAuditLogSubscription subscribes the provision function to the cluster's
// audit log. The log group exists once control-plane logging (audit) is on;
// it is imported by name, not created.
func (s *Stack) addAuditLogSubscription() {
	group := awslogs.LogGroup_FromLogGroupName(s.Stack, jsii.String("ClusterLogGroup"), jsii.String(AuditLogGroupName(s.props.ClusterName)))
	awslogs.NewSubscriptionFilter(s.Stack, jsii.String("AuditLogPods"), &awslogs.SubscriptionFilterProps{
		LogGroup:      group,
		Destination:   awslogsdestinations.NewLambdaDestination(s.functions[FnProvision], nil),
		FilterPattern: AuditFilterPattern(),
	})
}
