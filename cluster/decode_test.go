package cluster_test

import (
	"reflect"
	"testing"

	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/contracts"
)

func TestDecodeNamesTheField(t *testing.T) {
	env := func(typ, data string) string {
		return `{"specversion":"1.0","id":"x","source":"patrold","datacontenttype":"application/json","type":"` + typ + `","time":"2026-12-01T09:00:00Z","data":` + data + `}`
	}
	for _, tc := range []struct{ raw, want string }{
		{env("finding.opened", `{}`), `type: "finding.opened" is not patrold.state.change`},
		{env("patrold.state.change", `{"table":"findings","op":"upsert","rowid":1,"row":{"id":"a"}}`), "state change: origin is required"},
		{env("patrold.state.change", `{"origin":"a","op":"upsert","rowid":1,"row":{"id":"a"}}`), "state change: table is required"},
		{env("patrold.state.change", `{"origin":"a","table":"findings","op":"drop","rowid":1}`), `state change: op "drop" is not upsert, delete, epoch or touch`},
		{env("patrold.state.change", `{"origin":"a","table":"runs","op":"touch","rowid":0,"row":{"raised":{"x":2},"last_seen_at":"t","last_run_id":"r"}}`), `state change: a touch is of table findings, not "runs"`},
		{env("patrold.state.change", `{"origin":"a","table":"findings","op":"touch","rowid":0,"row":{"raised":{},"last_seen_at":"t","last_run_id":"r"}}`), "state change: row.raised must be a non-empty object of finding ids and times raised"},
		{env("patrold.state.change", `{"origin":"a","table":"findings","op":"touch","rowid":0,"row":{"raised":["x"],"last_seen_at":"t","last_run_id":"r"}}`), "state change: row.raised must be a non-empty object of finding ids and times raised"},
		{env("patrold.state.change", `{"origin":"a","table":"findings","op":"touch","rowid":0,"row":{"raised":{"x":0},"last_seen_at":"t","last_run_id":"r"}}`), `state change: row.raised["x"] must be a finding id raised at least once, got 0`},
		{env("patrold.state.change", `{"origin":"a","table":"findings","op":"touch","rowid":0,"row":{"raised":{"x":2},"last_seen_at":3,"last_run_id":"r"}}`), "state change: row.last_seen_at must be a non-empty string"},
		{env("patrold.state.change", `{"origin":"a","table":"findings","op":"touch","rowid":0,"row":{"raised":{"x":2},"last_seen_at":"t","last_run_id":"r","status":"x"}}`), "state change: a touch row holds exactly raised, last_seen_at and last_run_id"},
		{env("patrold.state.change", `{"origin":"a","table":"-","op":"epoch","rowid":0}`), `state change: an epoch marker needs epoch > 0, table "-" and no row`},
		{env("patrold.state.change", `{"origin":"a","epoch":3,"table":"findings","op":"epoch","rowid":0}`), `state change: an epoch marker needs epoch > 0, table "-" and no row`},
		{env("patrold.state.change", `{"origin":"a","table":"findings","op":"upsert","rowid":1}`), "state change: row is required for upsert"},
		{env("patrold.state.change", `{"origin":"a","table":"findings","op":"delete","rowid":1,"row":{"id":"a"}}`), "state change: row must be empty for delete"},
		{env("patrold.state.change", `{"origin":"a","table":"findings","op":"delete","rowid":1,"extra":1}`), `state change: json: unknown field "extra"`},
		{env("patrold.state.change", `{"origin":"a","table":"runs","op":"upsert","rowid":1,"row":{"id":"r","summary":{"a":1}}}`),
			`state change: row.summary: {"a":1} is not a column value (a string, a number or null) in runs upsert rowid 1`},
		{env("patrold.state.change", `{"origin":"a","table":"runs","op":"upsert","rowid":1,"row":{"complete":true}}`),
			`state change: row.complete: true is not a column value (a string, a number or null) in runs upsert rowid 1`},
	} {
		_, err := cluster.Decode([]byte(tc.raw))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Decode(%s) error = %v, want %q", tc.raw, err, tc.want)
		}
	}
	got, err := cluster.Decode([]byte(env("patrold.state.change", `{"origin":"a","table":"findings","op":"delete","rowid":7}`)))
	if err != nil || got.Origin != "a" || got.Table != "findings" || got.Op != "delete" || got.RowID != 7 || got.Row != nil {
		t.Fatalf("Decode = %+v, %v", got, err)
	}
	got, err = cluster.Decode([]byte(env("patrold.state.change", `{"origin":"b","epoch":9,"table":"-","op":"epoch","rowid":0}`)))
	if want := (contracts.StateChange{Origin: "b", Epoch: 9, Table: "-", Op: contracts.OpEpoch}); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode(marker) = %+v, %v; want %+v", got, err, want)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"patrold","datacontenttype":"application/json","type":"patrold.state.change","time":"2026-12-01T09:00:00Z","data":{"origin":"a","table":"findings","op":"upsert","rowid":1,"row":{"id":"a","n":1.5}}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := cluster.Decode(raw)
		if err != nil {
			return
		}
		if c.Origin == "" || c.Table == "" || (c.Op != "upsert" && c.Op != "delete" && c.Op != contracts.OpEpoch && c.Op != contracts.OpTouch) || (c.Op == contracts.OpEpoch && c.Epoch == 0) {
			t.Fatalf("accepted an invalid change: %+v", c)
		}
	})
}
