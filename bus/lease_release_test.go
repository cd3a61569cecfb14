package bus

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// lostAnswerKV stores each Create but answers it with an error, as when
// a stop's cancellation ends a write the server has already applied.
type lostAnswerKV struct {
	KeyValueStores
	once    sync.Once
	created chan struct{}
}

func (f *lostAnswerKV) CreateOrUpdateKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := f.KeyValueStores.CreateOrUpdateKeyValue(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &lostAnswerBucket{KeyValue: kv, kv: f}, nil
}

type lostAnswerBucket struct {
	jetstream.KeyValue
	kv *lostAnswerKV
}

func (b *lostAnswerBucket) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if _, err := b.KeyValue.Create(ctx, key, value, opts...); err != nil {
		return 0, err
	}
	b.kv.once.Do(func() { close(b.kv.created) })
	return 0, context.Canceled
}

// A graceful stop releases a key that names this holder even when the
// write that stored it never answered; otherwise a peer waits a TTL.
func TestLeaseCloseReleasesAKeyWhoseAnswerWasLost(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv.url())
	f := &lostAnswerKV{KeyValueStores: js, created: make(chan struct{})}
	l, err := NewLease(f, LeaseOptions{Key: "scheduler", Holder: "node-a", TTL: 30 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	select {
	case <-f.created:
	case <-time.After(10 * time.Second):
		t.Fatal("the lease never wrote its key")
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	kv, err := js.KeyValue(context.Background(), "patrold_leader")
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), "scheduler")
	if !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("after Close the key holds %q (%v), want it deleted", entryValue(e), err)
	}
}

func entryValue(e jetstream.KeyValueEntry) string {
	if e == nil {
		return ""
	}
	return string(e.Value())
}
