package api_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/api"
)

// durableCase is one request through DurableAnswers and what it answers.
type durableCase struct {
	name, method, path string
	status             int   // what the wrapped API answers
	seq                int64 // the last outbox row its commits wrote
	waitErr            error
	writerAfter        bool // writer once the API answered
	// want
	waited     []int64
	wantStatus int
	wantBody   string
	notDurable map[string]float64 // patrold_api_not_durable_total by will_publish
}

// notDurableCounts reads patrold_api_not_durable_total by will_publish.
func notDurableCounts(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "patrold_api_not_durable_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	return out
}

// TestDurableAnswersHoldSuccessUntilStored: a mutation's success is sent
// only after the wait for its last outbox row; a wait that fails, or a
// writer deposed while answering, turns it into 503 not_durable with the
// held answer. Reads, refusals and commits with no outbox row are not
// held, nor are the instance's own /-/ routes.
func TestDurableAnswersHoldSuccessUntilStored(t *testing.T) {
	held := `{"id":"s1"}`
	cases := []durableCase{
		{name: "stored", method: "POST", path: "/api/v1/silences", status: 200, seq: 7, writerAfter: true,
			waited: []int64{7}, wantStatus: 200, wantBody: held},
		{name: "read", method: "GET", path: "/api/v1/silences", status: 200, seq: 7, writerAfter: true,
			wantStatus: 200, wantBody: held},
		{name: "refused", method: "POST", path: "/api/v1/silences", status: 400, seq: 7, waitErr: context.DeadlineExceeded,
			wantStatus: 400, wantBody: held},
		{name: "nothing to publish", method: "POST", path: "/api/v1/runs", status: 202, writerAfter: true,
			wantStatus: 202, wantBody: held},
		{name: "own route", method: "POST", path: "/-/reload", status: 200, seq: 7, waitErr: context.DeadlineExceeded,
			wantStatus: 200, wantBody: held},
		{name: "not stored in time", method: "DELETE", path: "/api/v1/silences/s1", status: 200, seq: 9, writerAfter: true,
			waitErr: errors.New("outbox row 9 is not on the stream yet (acknowledged through 8): context deadline exceeded"),
			waited:  []int64{9}, wantStatus: 503,
			wantBody: `{"error":"not_durable","message":"the change is committed on this instance, but the stream did not store it within 2s ` +
				`(outbox row 9 is not on the stream yet (acknowledged through 8): context deadline exceeded): it is published once the stream answers, ` +
				`and lost if this instance fails first. Read it back (GET) before you rely on it; repeat the request if it is missing",` +
				`"details":{"answer":{"id":"s1"},"outbox_seq":9,"status":200,"will_publish":true}}` + "\n",
			notDurable: map[string]float64{"true": 1, "false": 0}},
		{name: "deposed while answering", method: "POST", path: "/api/v1/findings/f1/acknowledge", status: 200, seq: 11, writerAfter: false,
			wantStatus: 503,
			wantBody: `{"error":"not_durable","message":"this instance stopped being the writer while answering: the change may be committed ` +
				`only here, and the new writer does not apply it. Read it back (GET) and repeat the request if it is missing",` +
				`"details":{"answer":{"id":"s1"},"outbox_seq":11,"status":200,"will_publish":false}}` + "\n",
			notDurable: map[string]float64{"true": 0, "false": 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			writer := true
			var waited []int64
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				writer = c.writerAfter
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(held))
			})
			reg := prometheus.NewRegistry()
			h, err := api.DurableAnswers(next, api.DurableOptions{Registerer: reg,
				Track: func(ctx context.Context) (context.Context, func() int64) { return ctx, func() int64 { return c.seq } },
				Wait: func(ctx context.Context, seq int64) error {
					if _, ok := ctx.Deadline(); !ok {
						t.Error("the wait has no deadline")
					}
					waited = append(waited, seq)
					return c.waitErr
				},
				Writer:  func() bool { return writer },
				Timeout: 2 * time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
			if rec.Code != c.wantStatus || rec.Body.String() != c.wantBody || !reflect.DeepEqual(waited, c.waited) {
				t.Fatalf("answer %d %s (waited for %v), want %d %s (waited for %v)", rec.Code, rec.Body, waited, c.wantStatus, c.wantBody, c.waited)
			}
			want := c.notDurable
			if want == nil {
				want = map[string]float64{"true": 0, "false": 0}
			}
			if got := notDurableCounts(t, reg); !reflect.DeepEqual(got, want) {
				t.Fatalf("patrold_api_not_durable_total %v, want %v", got, want)
			}
		})
	}
}
