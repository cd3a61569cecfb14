package multi

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot"
)

var (
	t0 = time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Minute)
)

func fixed(snap *snapshot.Snapshot, problems []snapshot.Problem, err error) snapshot.Source {
	return snapshot.SourceFunc(func(context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
		if snap == nil {
			return nil, problems, err
		}
		cp := *snap
		cp.Resources = append([]snapshot.Resource(nil), snap.Resources...)
		return &cp, problems, err
	})
}

func res(id string, kind snapshot.Kind) snapshot.Resource {
	return snapshot.Resource{ID: id, Kind: kind}
}

func TestMergeKeepsEveryMembersResourcesAndNamesTheirProblems(t *testing.T) {
	pve := &snapshot.Snapshot{Version: 1, TakenAt: t0, Source: "proxmox",
		Resources: []snapshot.Resource{res("node/pve1", snapshot.KindNode), res("vm/100", snapshot.KindVM)}}
	pbs := &snapshot.Snapshot{Version: 1, TakenAt: t1, Source: "pbs",
		Resources: []snapshot.Resource{res("storage/pbs1/store1", snapshot.KindStorage)}}
	partial := snapshot.Problem{ID: "node/pve1", Index: -1, Field: "GET /nodes/pve1/disks/list", Problem: "HTTP 500"}
	s, err := New([]Member{{"pve", fixed(pve, []snapshot.Problem{partial}, nil)}, {"backup", fixed(pbs, nil, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	got, problems, err := s.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := &snapshot.Snapshot{Version: 1, TakenAt: t1, Source: "pve+backup", Resources: []snapshot.Resource{
		res("node/pve1", snapshot.KindNode), res("vm/100", snapshot.KindVM), res("storage/pbs1/store1", snapshot.KindStorage)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merged:\n got %+v\nwant %+v", got, want)
	}
	wantProblems := []snapshot.Problem{{ID: "node/pve1", Index: -1, Field: "GET /nodes/pve1/disks/list", Problem: "HTTP 500", Source: "pve"}}
	if !reflect.DeepEqual(problems, wantProblems) {
		t.Fatalf("problems:\n got %+v\nwant %+v", problems, wantProblems)
	}
	if wantProblems[0].SourceFailed() {
		t.Fatal("a partial failure reads as a failed source")
	}
}

// Attack: two sources report the same id. Neither copy may win silently.
func TestDuplicateIDAcrossSourcesDropsEveryCopyNamingBoth(t *testing.T) {
	a := &snapshot.Snapshot{Version: 1, TakenAt: t0, Resources: []snapshot.Resource{res("node/pve1", snapshot.KindNode), res("vm/100", snapshot.KindVM)}}
	b := &snapshot.Snapshot{Version: 1, TakenAt: t0, Resources: []snapshot.Resource{res("node/pve1", snapshot.KindNode)}}
	s, err := New([]Member{{"a", fixed(a, nil, nil)}, {"b", fixed(b, nil, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	got, problems, err := s.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []snapshot.Resource{res("vm/100", snapshot.KindVM)}; !reflect.DeepEqual(got.Resources, want) {
		t.Fatalf("resources: got %+v, want %+v", got.Resources, want)
	}
	want := []snapshot.Problem{
		{ID: "node/pve1", Index: 0, Field: "id", Problem: `duplicate id across sources "a" and "b": every copy dropped`, Source: "a"},
		{ID: "node/pve1", Index: 0, Field: "id", Problem: `duplicate id across sources "a" and "b": every copy dropped`, Source: "b"},
	}
	if !reflect.DeepEqual(problems, want) {
		t.Fatalf("problems:\n got %+v\nwant %+v", problems, want)
	}
}

func TestAFailingSourceIsOneProblemNamingIt(t *testing.T) {
	a := &snapshot.Snapshot{Version: 1, TakenAt: t0, Resources: []snapshot.Resource{res("node/pve1", snapshot.KindNode)}}
	s, err := New([]Member{{"a", fixed(a, nil, nil)}, {"b", fixed(nil, nil, errors.New("GET /status/datastore-usage: HTTP 401"))}})
	if err != nil {
		t.Fatal(err)
	}
	got, problems, err := s.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := &snapshot.Snapshot{Version: 1, TakenAt: t0, Source: "a", Resources: []snapshot.Resource{res("node/pve1", snapshot.KindNode)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merged: got %+v, want %+v", got, want)
	}
	wantProblems := []snapshot.Problem{{ID: "(source)", Index: -1, Field: snapshot.FieldCollect, Problem: "GET /status/datastore-usage: HTTP 401", Source: "b"}}
	if !reflect.DeepEqual(problems, wantProblems) {
		t.Fatalf("problems:\n got %+v\nwant %+v", problems, wantProblems)
	}
	if !problems[0].SourceFailed() {
		t.Fatal("the failed source's problem does not read as SourceFailed")
	}
}

func TestEverySourceFailingFailsTheCollection(t *testing.T) {
	s, err := New([]Member{{"a", fixed(nil, nil, errors.New("refused"))}, {"b", fixed(nil, nil, errors.New("timeout"))}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Collect(context.Background())
	if err == nil || err.Error() != "every source failed: a: refused\nb: timeout" {
		t.Fatalf("err = %v", err)
	}
}

func TestMembersNeedNamesOfTheirOwn(t *testing.T) {
	src := fixed(&snapshot.Snapshot{Version: 1}, nil, nil)
	for _, c := range []struct {
		members []Member
		want    string
	}{
		{nil, "sources: no source"},
		{[]Member{{"", src}}, "sources[0].name: required"},
		{[]Member{{"a", src}, {"a", src}}, `sources[1].name: duplicate source name "a"`},
		{[]Member{{"a", nil}}, "sources[0]: no source"},
	} {
		if _, err := New(c.members); err == nil || err.Error() != c.want {
			t.Errorf("New(%v) = %v, want %q", c.members, err, c.want)
		}
	}
}

// A member building unfit ids has them dropped, named by the member.
func TestUnfitIDsAreDroppedPerMember(t *testing.T) {
	a := &snapshot.Snapshot{Version: 1, TakenAt: t0, Resources: []snapshot.Resource{res("node/ok", snapshot.KindNode), res("node/\x1b[2J", snapshot.KindNode)}}
	s, _ := New([]Member{{"a", fixed(a, nil, nil)}})
	got, problems, err := s.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Resources) != 1 || len(problems) != 1 || problems[0].Source != "a" || problems[0].Field != "id" ||
		!strings.Contains(problems[0].Problem, "control character") {
		t.Fatalf("got %+v, problems %+v", got.Resources, problems)
	}
}
