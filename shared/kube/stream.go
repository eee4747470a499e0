package kube

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// listPage is one page of a list as fetched: the encodings of its items
// (protobuf), or the page decoded whole (any other encoding: a server or a
// test that answers JSON).
type listPage struct {
	items    [][]byte
	list     listObject
	rv, cont string
	err      error
}

// streamList pages through resource (of every namespace) and hands each
// item's protobuf encoding to item, one at a time, or, when the server
// answers in another encoding, each page decoded to whole. The next page is
// fetched while the current one is handed over (one page ahead: the
// hand-over is unbuffered), so the API server's work and the network
// overlap the caller's decoding; a page's bytes are released once handed
// over, so no more than two pages are held whatever the list's length. It returns the list's resourceVersion
// (the first page's: pages of one list are one consistent snapshot). A
// continue token that expires mid-way (410 Gone) fails the list: the caller
// reads again. Nothing it starts outlives it.
func (c *Client) streamList(ctx context.Context, rc rest.Interface, resource string, pageSize int64, newList func() listObject,
	item func([]byte) error, whole func(listObject) error) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	pages := make(chan listPage)
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	go func() {
		defer close(done)
		defer close(pages)
		cont := ""
		for {
			p := fetchPage(ctx, rc, resource, pageSize, cont, newList)
			select {
			case pages <- p:
			case <-ctx.Done():
				return
			}
			if p.err != nil || p.cont == "" {
				return
			}
			cont = p.cont
		}
	}()
	rv := ""
	for p := range pages {
		if p.err != nil {
			return "", p.err
		}
		if rv == "" {
			rv = p.rv
		}
		if p.list != nil {
			if err := whole(p.list); err != nil {
				return "", fmt.Errorf("list %s: %w", resource, err)
			}
			continue
		}
		for i, b := range p.items {
			if err := item(b); err != nil {
				return "", fmt.Errorf("list %s: item %d: %w", resource, i, err)
			}
			p.items[i] = nil
		}
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("list %s: %w", resource, err)
	}
	return rv, nil
}

// fetchPage reads one page of a list.
func fetchPage(ctx context.Context, rc rest.Interface, resource string, pageSize int64, cont string, newList func() listObject) listPage {
	req := rc.Get().Resource(resource).Param("limit", strconv.FormatInt(pageSize, 10))
	if cont != "" {
		req = req.Param("continue", cont)
	}
	res := req.Do(ctx)
	body, err := res.Raw()
	if err != nil {
		return listPage{err: fmt.Errorf("list %s: %w", resource, err)}
	}
	if !bytes.HasPrefix(body, protobufMagic) {
		l := newList()
		if err := res.Into(l); err != nil {
			return listPage{err: fmt.Errorf("list %s: %w", resource, err)}
		}
		return listPage{list: l, rv: l.GetResourceVersion(), cont: l.GetContinue()}
	}
	meta, items, err := protobufList(body)
	if err != nil {
		return listPage{err: fmt.Errorf("list %s: %w", resource, err)}
	}
	var lm metav1.ListMeta
	if err := lm.Unmarshal(meta); err != nil {
		return listPage{err: fmt.Errorf("list %s: list metadata: %w", resource, err)}
	}
	return listPage{items: items, rv: lm.ResourceVersion, cont: lm.Continue}
}
