package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
)

// getJSON fetches url with a read token and decodes the body into out.
func getJSON(t *testing.T, url string, out any) int {
	t.Helper()
	status, data := request(t, http.MethodGet, url, "read-secret-00001", "")
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("%s: %v: %s", url, err, data)
	}
	return status
}

// metricLines returns the exposition lines of d's /metrics that start
// with one of the names.
func metricLines(t *testing.T, d *daemon.Daemon, names ...string) []string {
	t.Helper()
	res, err := http.Get("http://" + d.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		for _, n := range names {
			if strings.HasPrefix(line, n+" ") || strings.HasPrefix(line, n+"{") {
				out = append(out, line)
			}
		}
	}
	return out
}

// roleStatus is the part of /api/v1/status about the instance.
type roleStatus struct {
	Leader        bool       `json:"scheduler_leader"`
	Role          string     `json:"role"`
	Instance      string     `json:"instance"`
	LeaderSince   *time.Time `json:"leader_since"`
	LastSuccessAt *time.Time `json:"last_success_at"`
}

type readyBody struct {
	Status        string     `json:"status"`
	Role          string     `json:"role"`
	Leader        *bool      `json:"leader"`
	LastSuccessAt *time.Time `json:"last_success_at"`
}

func ptr[T any](v T) *T { return &v }

func TestSingleInstanceShowsRoleAndLastSuccess(t *testing.T) {
	cfg, _ := slowConfig(t, t.TempDir(), "0")
	d := start(t, cfg)
	rep, err := d.RunNow(context.Background(), patrol.TriggerManual)
	if err != nil {
		t.Fatal(err)
	}
	finished := rep.FinishedAt.UTC()
	base := "http://" + d.HTTPAddr()
	var ready readyBody
	if code := getJSON(t, base+"/readyz", &ready); code != http.StatusOK {
		t.Fatalf("readyz %d", code)
	}
	if want := (readyBody{Status: "ready", Role: "single", Leader: ptr(true), LastSuccessAt: &finished}); !reflect.DeepEqual(ready, want) {
		t.Fatalf("readyz %+v, want %+v", ready, want)
	}
	var st roleStatus
	getJSON(t, base+"/api/v1/status", &st)
	if want := (roleStatus{Leader: true, Role: "single", LastSuccessAt: &finished}); !reflect.DeepEqual(st, want) {
		t.Fatalf("status %+v, want %+v", st, want)
	}
	got := metricLines(t, d, "patrold_leader", "patrold_role")
	want := []string{"patrold_leader 1", `patrold_role{role="leader"} 0`, `patrold_role{role="single"} 1`, `patrold_role{role="standby"} 0`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("metrics %q, want %q", got, want)
	}
}

// clusterOnOneServer is a cluster of instances on one embedded NATS
// server (stopped with the test): node starts one named instance on the
// slow fleet, all sharing the deployment key in keyFile.
type clusterOnOneServer struct {
	url, keyFile string
	node         func(name string) *daemon.Daemon
}

func oneServerCluster(t *testing.T) clusterOnOneServer {
	t.Helper()
	sopts, err := embedded.ServerOptions("127.0.0.1:0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := embedded.StartServer(sopts, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	c := clusterOnOneServer{url: srv.ClientURL(), keyFile: testkit.KeyFile(t)}
	c.node = func(name string) *daemon.Daemon {
		cfg, _ := slowConfig(t, t.TempDir(), "0")
		cfg.NATS.URL = c.url
		cfg.Cluster = &cluster.Config{Instance: name, SecretFile: c.keyFile}
		return start(t, cfg)
	}
	return c
}

func TestClusterStandbyShowsItsRole(t *testing.T) {
	node := oneServerCluster(t).node
	a := node("node-a")
	testkit.Eventually(t, 5*time.Second, "node-a leads", a.Leadership().HoldsLease)
	b := node("node-b")
	var ready readyBody
	// Ready once it saw the writer hold the lease and applied its first
	// change (docs/CLUSTER.md "Watching").
	testkit.EventuallyState(t, 10*time.Second, "a standby serves reads, so it is ready", func() (bool, string) {
		ready = readyBody{}
		code := getJSON(t, "http://"+b.HTTPAddr()+"/readyz", &ready)
		return code == http.StatusOK, fmt.Sprint(code)
	})
	if want := (readyBody{Status: "ready", Role: "standby", Leader: ptr(false)}); !reflect.DeepEqual(ready, want) {
		t.Fatalf("standby readyz %+v, want %+v", ready, want)
	}
	var st roleStatus
	getJSON(t, "http://"+b.HTTPAddr()+"/api/v1/status", &st)
	since := b.Leadership().Since().UTC()
	if want := (roleStatus{Role: "standby", Instance: "node-b", LeaderSince: &since}); !reflect.DeepEqual(st, want) {
		t.Fatalf("standby status %+v, want %+v", st, want)
	}
	getJSON(t, "http://"+a.HTTPAddr()+"/api/v1/status", &st)
	since = a.Leadership().Since().UTC()
	if want := (roleStatus{Leader: true, Role: "leader", Instance: "node-a", LeaderSince: &since}); !reflect.DeepEqual(st, want) {
		t.Fatalf("leader status %+v, want %+v", st, want)
	}
	got := metricLines(t, b, "patrold_leader", "patrold_role", "patrold_leadership_changes_total")
	want := []string{"patrold_leader 0", "patrold_leadership_changes_total 0", `patrold_role{role="leader"} 0`, `patrold_role{role="single"} 0`, `patrold_role{role="standby"} 1`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("standby metrics %q, want %q", got, want)
	}
	got = metricLines(t, a, "patrold_leader", "patrold_leadership_changes_total")
	if want := []string{"patrold_leader 1", "patrold_leadership_changes_total 1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("leader metrics %q, want %q", got, want)
	}
}
