package pause

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFor(t *testing.T) {
	var waited time.Duration
	fake := func(_ context.Context, d time.Duration) error { waited = d; return nil }
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		d      time.Duration
		wait   Func
		want   error
		waited time.Duration
	}{
		{"an injected wait is used", context.Background(), time.Hour, fake, nil, time.Hour},
		{"a real timer ends", context.Background(), time.Millisecond, nil, nil, 0},
		{"an ended context ends the wait", cancelled, time.Hour, nil, context.Canceled, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			waited = 0
			if err := For(tc.ctx, tc.d, tc.wait); !errors.Is(err, tc.want) {
				t.Errorf("For: %v, want %v", err, tc.want)
			}
			if waited != tc.waited {
				t.Errorf("injected wait saw %v, want %v", waited, tc.waited)
			}
		})
	}
}
