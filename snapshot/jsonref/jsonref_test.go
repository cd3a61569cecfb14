package jsonref_test

import (
	"reflect"
	"testing"

	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/jsonref"
)

// TestMirrorIsResource keeps the reference's structs those of the
// snapshot: the same exported fields and tags, in order, the metrics a
// map.
func TestMirrorIsResource(t *testing.T) {
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[snapshot.Snapshot](), reflect.TypeFor[jsonref.Snapshot]()},
		{reflect.TypeFor[snapshot.Resource](), reflect.TypeFor[jsonref.Resource]()},
	} {
		typ, mirror := pair[0], pair[1]
		var fields []reflect.StructField // the exported ones: what JSON reads
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() {
				fields = append(fields, f)
			}
		}
		if len(fields) != mirror.NumField() {
			t.Fatalf("%v has %d exported fields, its mirror %d", typ, len(fields), mirror.NumField())
		}
		for i, rf := range fields {
			mf := mirror.Field(i)
			same := rf.Name == mf.Name && rf.Tag == mf.Tag
			switch {
			case rf.Type == reflect.TypeFor[snapshot.Metrics]():
				same = same && mf.Type == reflect.TypeFor[map[string]float64]()
			case rf.Type == reflect.TypeFor[[]snapshot.Resource]():
				same = same && mf.Type == reflect.TypeFor[[]jsonref.Resource]()
			default:
				same = same && rf.Type == mf.Type
			}
			if !same {
				t.Errorf("%v field %d: %s %v %q, mirror %s %v %q", typ, i, rf.Name, rf.Type, rf.Tag, mf.Name, mf.Type, mf.Tag)
			}
		}
	}
}
