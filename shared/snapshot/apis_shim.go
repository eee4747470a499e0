package snapshot

// TEMPORARY(api-merge): this file stands in for apis.Parse, the strict
// loader being finished on branch `api`, with the same contract (Config with
// NodePools, NodeClasses and Other documents; Origin of parsed objects). It
// decodes the two Karpenter kinds leniently and does not validate them.
// Delete it and use apis.Parse / apis.Config / apis.Document when the loader
// is on main.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/shared/apis"
)

type karpenterConfig struct {
	NodePools   []*apis.NodePool
	NodeClasses []*apis.EC2NodeClass
	Other       []document
	origins     map[any]document
}

type document struct {
	Source     string
	Index      int
	Item       int
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	JSON       []byte
}

func (c *karpenterConfig) Origin(obj any) (document, bool) {
	d, ok := c.origins[obj]
	return d, ok
}

func parseKarpenter(data []byte, source string) (*karpenterConfig, error) {
	cfg := &karpenterConfig{origins: map[any]document{}}
	raws, err := shimSplit(data)
	if err != nil {
		return cfg, fmt.Errorf("%s: %w", source, err)
	}
	var errs []error
	for i, raw := range raws {
		docs, err := shimExpand(raw, source, i+1)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, d := range docs {
			if err := cfg.add(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return cfg, errors.Join(errs...)
}

func (c *karpenterConfig) add(d document) error {
	switch {
	case d.Kind == apis.NodePoolKind && strings.HasPrefix(d.APIVersion, apis.KarpenterGroup+"/"):
		np := &apis.NodePool{}
		if err := json.Unmarshal(d.JSON, np); err != nil {
			return fmt.Errorf("%s: document %d (NodePool %s): %w", d.Source, d.Index, d.Name, err)
		}
		c.NodePools = append(c.NodePools, np)
		c.origins[np] = d
	case d.Kind == apis.EC2NodeClassKind && strings.HasPrefix(d.APIVersion, apis.AWSGroup+"/"):
		nc := &apis.EC2NodeClass{}
		if err := json.Unmarshal(d.JSON, nc); err != nil {
			return fmt.Errorf("%s: document %d (EC2NodeClass %s): %w", d.Source, d.Index, d.Name, err)
		}
		c.NodeClasses = append(c.NodeClasses, nc)
		c.origins[nc] = d
	default:
		c.Other = append(c.Other, d)
	}
	return nil
}

func shimSplit(data []byte) ([][]byte, error) {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(data))
		var out [][]byte
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
				return out, nil
			} else if err != nil {
				return out, err
			}
			out = append(out, raw)
		}
	}
	var out [][]byte
	for _, chunk := range strings.Split("\n"+string(data), "\n---") {
		if i := strings.IndexByte(chunk, '\n'); i >= 0 && strings.HasPrefix(strings.TrimSpace(chunk[:i]), "#") {
			chunk = chunk[i:]
		}
		j, err := yaml.YAMLToJSON([]byte(chunk))
		if err != nil {
			return out, err
		}
		if !isNull(j) {
			out = append(out, j)
		}
	}
	return out, nil
}

func shimExpand(raw []byte, source string, index int) ([]document, error) {
	var h struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name, Namespace string
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, fmt.Errorf("%s: document %d: %w", source, index, err)
	}
	if h.Kind == "" || h.APIVersion == "" {
		return nil, fmt.Errorf("%s: document %d: apiVersion and kind are required", source, index)
	}
	if h.Kind != "List" {
		return []document{{Source: source, Index: index, APIVersion: h.APIVersion, Kind: h.Kind,
			Namespace: h.Metadata.Namespace, Name: h.Metadata.Name, JSON: raw}}, nil
	}
	var out []document
	for i, item := range h.Items {
		docs, err := shimExpand(item, source, index)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			d.Item = i + 1
			out = append(out, d)
		}
	}
	return out, nil
}
