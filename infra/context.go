package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/nodewright/nodewright/infra/stack"
)

// contextPrefix is the prefix of every context key the app reads.
const contextPrefix = "nodewright:"

// appContext reads context values given with -c nodewright:KEY=VALUE (always
// strings) or in cdk.json (JSON types).
type appContext struct {
	get func(key string) any
}

func contextOf(app awscdk.App) appContext {
	return appContext{get: func(key string) any { return app.Node().TryGetContext(jsii.String(contextPrefix + key)) }}
}

func (c appContext) str(key, def string) string {
	switch v := c.get(key).(type) {
	case nil:
		return def
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// list reads a comma-separated list (or a JSON list in cdk.json).
func (c appContext) list(key string) []string {
	var parts []string
	switch v := c.get(key).(type) {
	case string:
		parts = strings.Split(v, ",")
	case []any:
		for _, e := range v {
			parts = append(parts, fmt.Sprint(e))
		}
	}
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (c appContext) boolean(key string) (bool, error) {
	switch v := c.get(key).(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case string:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("context %s%s=%q: want true or false", contextPrefix, key, v)
		}
		return b, nil
	default:
		return false, fmt.Errorf("context %s%s=%v: want true or false", contextPrefix, key, v)
	}
}

func (c appContext) number(key string) (float64, error) {
	switch v := c.get(key).(type) {
	case nil:
		return 0, nil
	case float64:
		return v, nil
	case string:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("context %s%s=%q: want a number", contextPrefix, key, v)
		}
		return f, nil
	default:
		return 0, fmt.Errorf("context %s%s=%v: want a number", contextPrefix, key, v)
	}
}

// retention maps a number of days to the CloudWatch Logs retention CDK
// accepts.
var retention = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS, 5: awslogs.RetentionDays_FIVE_DAYS,
	7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS, 180: awslogs.RetentionDays_SIX_MONTHS,
	365: awslogs.RetentionDays_ONE_YEAR, 731: awslogs.RetentionDays_TWO_YEARS, 1827: awslogs.RetentionDays_FIVE_YEARS,
	3653: awslogs.RetentionDays_TEN_YEARS,
}

// props builds the stack's props from context (everything but the
// configuration and the function assets).
func (c appContext) props() (stack.Props, error) {
	p := stack.Props{
		ClusterName:           c.str("cluster", ""),
		NodeRoleName:          c.str("nodeRole", ""),
		SweepSchedule:         c.str("sweepSchedule", ""),
		ConsolidationSchedule: c.str("consolidationSchedule", ""),
		LogLevel:              c.str("logLevel", ""),
		AlarmEmail:            c.str("alarmEmail", ""),
		AlarmTopicArn:         c.str("alarmTopicArn", ""),
	}
	if c.str("config", "") == "" {
		return p, fmt.Errorf("no configuration: set -c %sconfig=DIR to a directory of NodePool and EC2NodeClass YAML", contextPrefix)
	}
	if acct, region := c.str("account", ""), c.str("region", ""); acct != "" || region != "" {
		p.Env = &awscdk.Environment{}
		if acct != "" {
			p.Env.Account = jsii.String(acct)
		}
		if region != "" {
			p.Env.Region = jsii.String(region)
		}
	}
	subnets, groups := c.list("subnetIds"), c.list("securityGroupIds")
	if len(subnets) > 0 || len(groups) > 0 {
		p.Network = &stack.Network{SubnetIDs: subnets, SecurityGroupIDs: groups}
	}
	var err error
	flags := map[string]*bool{"importNodeRole": &p.ImportNodeRole, "skipAccessEntries": &p.SkipAccessEntries,
		"skipAuditLogTrigger": &p.SkipAuditLogTrigger, "skipReservedConcurrency": &p.SkipReservedConcurrency}
	for key, dst := range flags {
		if *dst, err = c.boolean(key); err != nil {
			return p, err
		}
	}
	nums := map[string]*float64{"launchFailureThreshold": &p.LaunchFailureThreshold, "functionErrorThreshold": &p.FunctionErrorThreshold}
	for key, dst := range nums {
		if *dst, err = c.number(key); err != nil {
			return p, err
		}
	}
	timeout, err := c.number("webhookTimeoutSeconds")
	if err != nil {
		return p, err
	}
	p.WebhookTimeoutSeconds = int(timeout)
	days, err := c.number("webhookTokenRotationDays")
	if err != nil {
		return p, err
	}
	p.WebhookTokenRotationDays = int(days)
	if days, err := c.number("logRetentionDays"); err != nil {
		return p, err
	} else if days != 0 {
		r, ok := retention[int(days)]
		if !ok {
			return p, fmt.Errorf("context %slogRetentionDays=%g: use one of 1, 3, 5, 7, 14, 30, 60, 90, 180, 365, 731, 1827, 3653", contextPrefix, days)
		}
		p.LogRetention = r
	}
	if s := c.str("registrationTimeout", ""); s != "" {
		if p.RegistrationTimeout, err = time.ParseDuration(s); err != nil {
			return p, fmt.Errorf("context %sregistrationTimeout=%q: want a duration such as 15m", contextPrefix, s)
		}
	}
	p.SSMParameters = c.list("ssmParameters")
	if s := c.str("pendingPodAgeThreshold", ""); s != "" {
		if p.PendingPodAgeThreshold, err = time.ParseDuration(s); err != nil {
			return p, fmt.Errorf("context %spendingPodAgeThreshold=%q: want a duration such as 5m", contextPrefix, s)
		}
	}
	return p, nil
}
