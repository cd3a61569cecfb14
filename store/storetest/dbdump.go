package storetest

import (
	"database/sql"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3" // the store's driver
)

// DB is every row of every table of a database, each row as its columns'
// values in order: a whole value to compare before and after an attack.
type DB map[string][]string

// DumpDB reads every table of the SQLite database at path, read-only,
// each table's rows sorted (some tables have no rowid).
func DumpDB(t testing.TB, path string) DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
	if err != nil {
		t.Fatalf("list tables: %v", err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	out := DB{}
	for _, tb := range tables {
		out[tb] = dumpTable(t, db, tb)
	}
	return out
}

func dumpTable(t testing.TB, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT * FROM "` + table + `"`)
	if err != nil {
		t.Fatalf("read %s: %v", table, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		parts := make([]string, len(cols))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			parts[i] = fmt.Sprintf("%s=%v", cols[i], v)
		}
		out = append(out, strings.Join(parts, " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out) // some tables have no rowid to order by
	return out
}

// SameDB fails t, naming the tables that differ, unless got is want.
func SameDB(t testing.TB, what string, got, want DB) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	for tb := range want {
		if !reflect.DeepEqual(got[tb], want[tb]) {
			t.Errorf("%s: table %s changed\n got: %q\nwant: %q", what, tb, got[tb], want[tb])
		}
	}
	for tb := range got {
		if _, ok := want[tb]; !ok {
			t.Errorf("%s: table %s appeared", what, tb)
		}
	}
}
