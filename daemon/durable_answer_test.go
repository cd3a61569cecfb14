package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/store/storetest"
)

// outboxRow is an outbox row as the stream must carry it.
type outboxRow struct {
	ID, Subject, Type, Resource string
	Time                        time.Time
	Data                        string // compacted JSON
}

func compactJSON(t *testing.T, data []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		t.Fatalf("data %q: %v", data, err)
	}
	return b.String()
}

// outboxAfter reads, from the database file, the outbox rows after seq.
func outboxAfter(t *testing.T, path string, seq int64) (rows []outboxRow, last int64) {
	t.Helper()
	q, err := storetest.RawDB(t, path).Query("SELECT seq, id, subject, type, resource_id, time, data FROM outbox WHERE seq > ? ORDER BY seq", seq)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	last = seq
	for q.Next() {
		var r outboxRow
		var at string
		var data []byte
		if err := q.Scan(&last, &r.ID, &r.Subject, &r.Type, &r.Resource, &at, &data); err != nil {
			t.Fatal(err)
		}
		if r.Time, err = time.Parse(time.RFC3339Nano, at); err != nil {
			t.Fatal(err)
		}
		r.Data = compactJSON(t, data)
		rows = append(rows, r)
	}
	if err := q.Err(); err != nil {
		t.Fatal(err)
	}
	return rows, last
}

// onStream reads the patrol stream through url and returns the rows of
// the messages whose ids are among want's, in stream order.
func onStream(t *testing.T, url string, want []outboxRow) []outboxRow {
	t.Helper()
	ids := map[string]bool{}
	for _, r := range want {
		ids[r.ID] = true
	}
	var got []outboxRow
	for _, m := range natstest.Messages(t, url) {
		if !ids[m.Header.Get(jetstream.MsgIDHeader)] {
			continue
		}
		ev, err := contracts.DecodeEvent(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, outboxRow{ID: ev.ID, Subject: strings.TrimPrefix(m.Subject, "patrol."), Type: ev.Type, Resource: ev.Subject,
			Time: ev.Time, Data: compactJSON(t, ev.Data)})
	}
	return got
}

// request sends method to url with a bearer token (and a JSON body, if
// any) and returns the status and the body.
func request(t *testing.T, method, url, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

// post sends an admin POST to the API at addr.
func post(t *testing.T, addr, path, body string) (int, []byte) {
	t.Helper()
	return request(t, http.MethodPost, "http://"+addr+path, "admin-secret-0001", body)
}

// TestAnsweredActionIsOnTheStream: in cluster mode the writer answers a
// mutation only once its change is on the stream. The stream is read
// right after the answer, without waiting: every outbox row the action
// committed is there, whole. With the NATS server down the answer is
// 503 not_durable, saying the change is committed here and on its way;
// once the server is back the rows are on the stream, whole too.
func TestAnsweredActionIsOnTheStream(t *testing.T) {
	natsDir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	var srv *server.Server
	startNATS := func() {
		o, err := embedded.ServerOptions(addr, natsDir)
		if err != nil {
			t.Fatal(err)
		}
		if srv, err = embedded.StartServer(o, nil); err != nil {
			t.Fatal(err)
		}
	}
	stopNATS := func() {
		if srv != nil {
			srv.Shutdown()
			srv.WaitForShutdown()
			srv = nil
		}
	}
	startNATS()
	t.Cleanup(stopNATS)
	url := "nats://" + addr

	dir := t.TempDir()
	useSnapshot(t, dir, "faults.json")
	// The lease outlasts the outage, so the instance stays the writer.
	yaml := "data_dir: " + dir + "\nlog: {level: warn}\n" +
		"http: {listen: '127.0.0.1:0', stream_ack_timeout: 1s, tokens: [{name: ops, token: admin-secret-0001, scope: admin}]}\n" +
		"cluster: {secret_file: " + testkit.KeyFile(t) + ", instance: node-1}\n" +
		"nats: {url: '" + url + "', lease: {ttl: 60s}}\n" +
		"schedule: {cron: '@every 1h', startup_delay: 1h}\n" +
		"source: {kind: file, file: {path: " + dir + "/snapshot.json}}\n"
	cfg, err := config.Load([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, cfg)
	testkit.Eventually(t, 15*time.Second, "the instance is the writer", d.IsWriter)
	ctx := context.Background()
	rep, err := d.RunNow(ctx, patrol.TriggerManual)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) < 2 {
		t.Fatalf("the run filed %d findings, want 2 or more", len(rep.Findings))
	}
	testkit.Eventually(t, 20*time.Second, "the run is published", func() bool {
		n, err := d.Store().PendingCount(ctx)
		return err == nil && n == 0
	})
	path := d.Store().Path()
	_, last := outboxAfter(t, path, 0)

	status, body := post(t, d.HTTPAddr(), "/api/v1/findings/"+rep.Findings[0].ID+"/dismiss", `{"reason":"not_an_issue"}`)
	// Read at once: a 200 says the rows are on the stream now.
	rows, next := outboxAfter(t, path, last)
	if status != http.StatusOK {
		t.Fatalf("dismiss: %d %s", status, body)
	}
	if len(rows) == 0 {
		t.Fatal("the dismissal committed no outbox row")
	}
	if got := onStream(t, url, rows); !reflect.DeepEqual(got, rows) {
		t.Fatalf("right after the 200 the stream holds\n%+v\nwant the action's rows\n%+v", got, rows)
	}

	stopNATS()
	status, body = post(t, d.HTTPAddr(), "/api/v1/silences",
		`{"matchers":{"resource":"`+rep.Findings[1].ResourceID+`"},"comment":"maintenance","ends_at":"`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"}`)
	if status != http.StatusServiceUnavailable {
		t.Fatalf("silence with the stream down: %d %s, want 503", status, body)
	}
	var e struct {
		Error   string         `json:"error"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatal(err)
	}
	rows, _ = outboxAfter(t, path, next)
	if len(rows) == 0 {
		t.Fatal("the silence committed no outbox row")
	}
	answer, _ := e.Details["answer"].(map[string]any)
	wantMsg := "the change is committed on this instance, but the stream did not store it within 1s"
	if e.Error != "not_durable" || !strings.HasPrefix(e.Message, wantMsg) || e.Details["will_publish"] != true ||
		e.Details["status"] != float64(http.StatusOK) || answer["comment"] != "maintenance" {
		t.Fatalf("503 body %s, want not_durable %q..., will_publish, status 200 and the silence", body, wantMsg)
	}
	got := metricLines(t, d, "patrold_api_not_durable_total")
	wantLines := []string{`patrold_api_not_durable_total{will_publish="false"} 0`, `patrold_api_not_durable_total{will_publish="true"} 1`}
	if !reflect.DeepEqual(got, wantLines) {
		t.Fatalf("metrics %q, want %q", got, wantLines)
	}
	// Nothing is lost once the server is back.
	startNATS()
	testkit.Eventually(t, 60*time.Second, "the silence is published", func() bool {
		n, err := d.Store().PendingCount(ctx)
		return err == nil && n == 0
	})
	if got := onStream(t, url, rows); !reflect.DeepEqual(got, rows) {
		t.Fatalf("after the outage the stream holds\n%+v\nwant the silence's rows\n%+v", got, rows)
	}
}
