package scale

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// etcdWriter writes objects straight into etcd as the API server stores
// them (keys under /registry, built-in kinds in the API server's protobuf
// encoding, custom resources as JSON), through etcd's v3 JSON gateway, in
// transactions of up to txnOps puts (etcd's --max-txn-ops is 128).
type etcdWriter struct {
	url  string
	http *http.Client
	pb   *protobuf.Serializer
}

const txnOps = 100

func newEtcdWriter(url string) *etcdWriter {
	return &etcdWriter{url: url, http: &http.Client{}, pb: protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)}
}

// kv is one key and its stored value (nil value: delete the key).
type kv struct {
	key   string
	value []byte
}

// proto encodes a built-in object (its TypeMeta set) as the API server
// stores it.
func (w *etcdWriter) proto(obj runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	if err := w.pb.Encode(obj, &buf); err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	return buf.Bytes(), nil
}

// txn writes (or deletes) the keys in one transaction.
func (w *etcdWriter) txn(ctx context.Context, kvs []kv) error {
	type put struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	type del struct {
		Key string `json:"key"`
	}
	type op struct {
		Put *put `json:"request_put,omitempty"`
		Del *del `json:"request_delete_range,omitempty"`
	}
	ops := make([]op, len(kvs))
	for i, x := range kvs {
		k := base64.StdEncoding.EncodeToString([]byte(x.key))
		if x.value == nil {
			ops[i] = op{Del: &del{Key: k}}
		} else {
			ops[i] = op{Put: &put{Key: k, Value: base64.StdEncoding.EncodeToString(x.value)}}
		}
	}
	body, err := json.Marshal(map[string]any{"success": ops})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url+"/v3/kv/txn", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := w.http.Do(req)
	if err != nil {
		return fmt.Errorf("etcd txn: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd txn: %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	var out struct {
		Error     string `json:"error"`
		Succeeded bool   `json:"succeeded"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Errorf("etcd txn: %w", err)
	}
	if out.Error != "" || !out.Succeeded {
		return fmt.Errorf("etcd txn: %s", bytes.TrimSpace(b))
	}
	return nil
}

// writeAll writes kvs in transactions with workers concurrent writers.
func (w *etcdWriter) writeAll(ctx context.Context, kvs []kv, workers int) error {
	batches := make(chan []kv)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				if err := w.txn(ctx, b); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := 0; i < len(kvs); i += txnOps {
		select {
		case batches <- kvs[i:min(i+txnOps, len(kvs))]:
		case err = <-errs:
			break feed
		}
	}
	close(batches)
	wg.Wait()
	close(errs)
	if err != nil {
		return err
	}
	return <-errs
}
