package bus

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/bus/msgauth"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/internal/testkit"
)

// TestTriggerSenderNeedsNoStreamPermissions: a sender whose NATS user may
// only publish trigger requests and read its inbox (what
// docs/NATS.md#trigger-requests needs) reaches the writer with Dial.
// Start, which also ensures the stream, is refused for that user: the
// attack is a deployment that gives a monitor no more than the trigger
// subject, and the sender must still work.
func TestTriggerSenderNeedsNoStreamPermissions(t *testing.T) {
	opts, err := embedded.ServerOptions("127.0.0.1:0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	subject := contracts.TriggerSubject(testPrefix)
	opts.Users = []*server.User{
		{Username: "writer", Password: "writer-pass"},
		{Username: "monitor", Password: "monitor-pass", Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{subject}},
			Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
		}},
	}
	srv, err := embedded.StartServer(opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	auth, err := msgauth.New([]msgauth.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, msgauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	newBus := func(user, pass string) *Bus {
		g, err := NewGuard(auth, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := New(Options{URL: srv.ClientURL(), SubjectPrefix: testPrefix, User: user, Password: pass}, nil, nil, WithGuard(g))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	writer := newBus("writer", "writer-pass")
	if err := writer.Start(ctx); err != nil {
		t.Fatal(err)
	}
	asked := make(chan contracts.TriggerRequest, 2)
	served := make(chan error, 1)
	go func() {
		served <- writer.ServeTriggers(ctx, func(r contracts.TriggerRequest) contracts.TriggerAnswer {
			asked <- r
			return contracts.TriggerAnswer{Outcome: "taken", RunID: "run-1", Resources: r.Resources}
		})
	}()
	testkit.Eventually(t, 10*time.Second, "the writer subscribes to trigger requests", func() bool {
		return writer.Conn().NumSubscriptions() > 0 && writer.Conn().Flush() == nil
	})

	started := newBus("monitor", "monitor-pass")
	sctx, scancel := context.WithTimeout(ctx, 3*time.Second)
	defer scancel()
	if err := started.Start(sctx); err == nil || !strings.Contains(err.Error(), "stream") {
		t.Fatalf("Start for a trigger-only user: %v, want the stream refused", err)
	}
	sender := newBus("monitor", "monitor-pass")
	if err := sender.Dial(); err != nil {
		t.Fatalf("Dial for a trigger-only user: %v", err)
	}
	req := contracts.TriggerRequest{Resources: []string{"node/pve1"}, Reason: "HostDown on pve1"}
	ans, err := sender.RequestTrigger(ctx, req, DefaultConnectTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if want := (contracts.TriggerAnswer{Outcome: "taken", RunID: "run-1", Resources: req.Resources}); !reflect.DeepEqual(ans, want) {
		t.Fatalf("answer %+v, want %+v", ans, want)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("ServeTriggers: %v", err)
	}
	close(asked)
	var took []contracts.TriggerRequest
	for r := range asked {
		took = append(took, r)
	}
	if !reflect.DeepEqual(took, []contracts.TriggerRequest{req}) {
		t.Fatalf("the writer took %+v, want the one request", took)
	}
}
