package scale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/test/localcloud"
)

// item is a DynamoDB item as JSON (DynamoDB's own JSON form, e.g.
// {"S": "..."}).
type item map[string]any

// scanItems reads every item of the state table (straight from moto).
func scanItems(ctx context.Context, lc *localcloud.Cloud) ([]item, error) {
	_, db, err := directStore(lc)
	if err != nil {
		return nil, err
	}
	var out []item
	in := &dynamodb.ScanInput{TableName: aws.String(lc.Names.Table)}
	for {
		page, err := db.Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("scan the state table: %w", err)
		}
		for _, it := range page.Items {
			j := item{}
			for k, v := range it {
				if j[k], err = avJSON(v); err != nil {
					return nil, err
				}
			}
			out = append(out, j)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

func avJSON(v types.AttributeValue) (any, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}, nil
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}, nil
	case *types.AttributeValueMemberB:
		return map[string]any{"B": v.Value}, nil
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}, nil
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}, nil
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}, nil
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": v.Value}, nil
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, x := range v.Value {
			var err error
			if l[i], err = avJSON(x); err != nil {
				return nil, err
			}
		}
		return map[string]any{"L": l}, nil
	case *types.AttributeValueMemberM:
		m := map[string]any{}
		for k, x := range v.Value {
			var err error
			if m[k], err = avJSON(x); err != nil {
				return nil, err
			}
		}
		return map[string]any{"M": m}, nil
	}
	return nil, fmt.Errorf("attribute value %T not kept", v)
}

// av is avJSON's inverse (for the JSON read back).
func av(j any) (types.AttributeValue, error) {
	m, ok := j.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, fmt.Errorf("attribute value %v", j)
	}
	for k, x := range m {
		switch k {
		case "S":
			return &types.AttributeValueMemberS{Value: x.(string)}, nil
		case "N":
			return &types.AttributeValueMemberN{Value: x.(string)}, nil
		case "B":
			b, err := json.Marshal(x)
			if err != nil {
				return nil, err
			}
			var raw []byte
			err = json.Unmarshal(b, &raw)
			return &types.AttributeValueMemberB{Value: raw}, err
		case "BOOL":
			return &types.AttributeValueMemberBOOL{Value: x.(bool)}, nil
		case "NULL":
			return &types.AttributeValueMemberNULL{Value: true}, nil
		case "SS", "NS":
			var ss []string
			for _, s := range x.([]any) {
				ss = append(ss, s.(string))
			}
			if k == "SS" {
				return &types.AttributeValueMemberSS{Value: ss}, nil
			}
			return &types.AttributeValueMemberNS{Value: ss}, nil
		case "L":
			var l []types.AttributeValue
			for _, e := range x.([]any) {
				v, err := av(e)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			return &types.AttributeValueMemberL{Value: l}, nil
		case "M":
			mm := map[string]types.AttributeValue{}
			for kk, e := range x.(map[string]any) {
				v, err := av(e)
				if err != nil {
					return nil, err
				}
				mm[kk] = v
			}
			return &types.AttributeValueMemberM{Value: mm}, nil
		}
	}
	return nil, fmt.Errorf("attribute value %v", j)
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// dirSize is the bytes of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// Cached returns the snapshot's plan if the cache holds one of this
// builder's version for s.
func Cached(cache string, s Size) (*Plan, bool) {
	var p Plan
	dir := snapshotDir(cache, s)
	if readJSON(filepath.Join(dir, "plan.json"), &p) != nil || p.Version != Version || p.Size != s {
		return nil, false
	}
	if _, err := os.Stat(filepath.Join(dir, "items.json")); err != nil {
		return nil, false
	}
	return &p, true
}

// Restored is a local cloud restored from a snapshot.
type Restored struct {
	LC       *localcloud.Cloud
	Plan     *Plan
	Took     time.Duration
	Snapshot int64 // bytes on disk
}

// Restore starts a local cloud on a copy of the snapshot's etcd data, puts
// the state table's items back and launches the instances again, in the
// same order after seeding moto as the build did, checking that they get
// the same IDs. The caller closes the cloud.
func Restore(ctx context.Context, cache string, s Size, log *slog.Logger) (_ *Restored, err error) {
	start := time.Now()
	plan, ok := Cached(cache, s)
	if !ok {
		return nil, fmt.Errorf("no snapshot of %s in %s", s.Name(), cache)
	}
	dir := snapshotDir(cache, s)
	var items []item
	if err := readJSON(filepath.Join(dir, "items.json"), &items); err != nil {
		return nil, err
	}
	stateDir := "" // the local cloud's own, removed on Close
	if os.Getenv("NODEWRIGHT_SCALE_KEEP") != "" {
		if stateDir, err = os.MkdirTemp("", "nodewright-scale-"); err != nil {
			return nil, err
		}
		log.Info("keeping the local cloud's state", "dir", stateDir)
	}
	lc, err := localcloud.Start(ctx, cloudOptions(stateDir, filepath.Join(dir, "etcd")))
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lc.Close()
		}
	}()
	// The template's address, then the seeded launches.
	e := directEC2(lc)
	ph, err := e.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String(plan.Groups[0].ImageID), InstanceType: ec2types.InstanceType(plan.Groups[0].Type),
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SubnetId: aws.String(lc.Seeded.Subnets[plan.TemplateSubnet].ID)})
	if err != nil {
		return nil, fmt.Errorf("restore: the template's address: %w", err)
	}
	if _, err := e.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{aws.ToString(ph.Instances[0].InstanceId)}}); err != nil {
		return nil, err
	}
	if err := seedMoto(ctx, lc); err != nil {
		return nil, err
	}
	var subnets []string
	pairs := []string{plan.SecurityGroup, lc.Seeded.SecurityGroupID, plan.VPC, lc.Seeded.VPCID}
	for i, sn := range lc.Seeded.Subnets {
		subnets = append(subnets, sn.ID)
		pairs = append(pairs, plan.Subnets[i], sn.ID)
	}
	insts, err := launchGroups(ctx, lc, plan.Groups, subnets, lc.Seeded.SecurityGroupID)
	if err != nil {
		return nil, err
	}
	for i, in := range insts {
		if id := aws.ToString(in.InstanceId); id != plan.Nodes[i].Instance || aws.ToString(in.PrivateDnsName) != plan.Nodes[i].Name {
			return nil, fmt.Errorf("restore: instance %d is %s (%s), the snapshot's was %s (%s): moto's seeded IDs differ (another moto version?); rebuild with -rebuild",
				i, id, aws.ToString(in.PrivateDnsName), plan.Nodes[i].Instance, plan.Nodes[i].Name)
		}
	}
	b, err := json.Marshal(items)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(strings.NewReplacer(pairs...).Replace(string(b))), &items); err != nil {
		return nil, err
	}
	if err := putItems(ctx, lc, durable(items)); err != nil {
		return nil, err
	}
	kc, _, err := kubeFor(lc)
	if err != nil {
		return nil, err
	}
	if err := waitServed(ctx, kc, plan); err != nil {
		return nil, err
	}
	r := &Restored{LC: lc, Plan: plan, Took: time.Since(start), Snapshot: dirSize(dir)}
	log.Info("restored", "size", s.Name(), "took", r.Took.Round(time.Millisecond).String(), "snapshotMiB", r.Snapshot>>20)
	return r, nil
}

// putItems writes the items back, 25 a BatchWriteItem.
func putItems(ctx context.Context, lc *localcloud.Cloud, items []item) error {
	_, db, err := directStore(lc)
	if err != nil {
		return err
	}
	n := (len(items) + 24) / 25
	return parallel(n, 8, func(b int) error {
		var reqs []types.WriteRequest
		for _, j := range items[b*25 : min(b*25+25, len(items))] {
			it := map[string]types.AttributeValue{}
			for k, x := range j {
				v, err := av(x)
				if err != nil {
					return err
				}
				it[k] = v
			}
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		}
		for len(reqs) > 0 {
			out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{lc.Names.Table: reqs}})
			if err != nil {
				return fmt.Errorf("restore items: %w", err)
			}
			reqs = out.UnprocessedItems[lc.Names.Table]
		}
		return nil
	})
}

var _ = errors.New

// durable leaves out the records' change items (state.PrefixChange): they
// are the build's writes, minutes old, which a real cluster's table would
// have expired, and a first warm read would otherwise count them as this
// run's changes.
func durable(items []item) []item {
	out := items[:0:0]
	for _, it := range items {
		if sk, ok := it[names.SortKey].(map[string]any); ok {
			if v, _ := sk["S"].(string); strings.HasPrefix(v, state.PrefixChange) {
				continue
			}
		}
		out = append(out, it)
	}
	return out
}
