package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
)

// hostile is text no source or model should get into the store, as an
// older store (or a bug) might still hold it: it clears the screen,
// forges a log line and reverses what follows.
const hostile = "x\x1b[2J\x1b[H\nlevel=ERROR msg=\"all clear\"\u202e\r"

const hostileEscaped = `x\x1b[2J\x1b[H\nlevel=ERROR msg="all clear"\u202e\r`

// TestTextOutputEscapesEveryField: the findings list, a finding shown and
// a run report print every field escaped, each on its own line.
func TestTextOutputEscapesEveryField(t *testing.T) {
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	f := findings.Finding{ID: "id" + hostile, Key: "key" + hostile, ResourceID: "vm/" + hostile, Category: "general", Severity: "warning",
		Source: findings.SourceModel, Title: "title" + hostile, Description: "d" + hostile, Recommendation: "r" + hostile, Evidence: "e" + hostile,
		Status: findings.StatusActive, DetectedAt: at, LastSeenAt: at, TimesRaised: 1}
	var list bytes.Buffer
	printFindings(&list, []findings.Finding{f})
	want := "ID                SEVERITY  STATE                ACKED  KEY                RESOURCE                        TITLE\n" +
		"id" + hostileEscaped + "  warning   detected             -      key" + hostileEscaped + "  vm/" + hostileEscaped + "  title" + hostileEscaped + "\n"
	if list.String() != want {
		t.Errorf("findings list:\n got %q\nwant %q", list.String(), want)
	}
	var show bytes.Buffer
	printFinding(&show, &f, []findings.Event{{At: at, Kind: "opened" + hostile, Detail: "detail" + hostile}})
	want = "id" + hostileEscaped + "  title" + hostileEscaped + "\n" +
		"  resource:       vm/" + hostileEscaped + "\n" +
		"  key:            key" + hostileEscaped + "\n" +
		"  category:       general\n  severity:       warning\n  state:          detected\n  source:         model\n" +
		"  detected:       2026-11-29T06:00:00Z\n  last seen:      2026-11-29T06:00:00Z\n  times raised:   1\n  regressions:    0\n" +
		"  description:    d" + hostileEscaped + "\n" +
		"  recommendation: r" + hostileEscaped + "\n" +
		"  evidence:       e" + hostileEscaped + "\n" +
		"  history:\n    2026-11-29T06:00:00Z  opened" + hostileEscaped + " detail" + strings.TrimSuffix(hostileEscaped, `\r`) + "\n" // the detail is trimmed
	if show.String() != want {
		t.Errorf("findings show:\n got %q\nwant %q", show.String(), want)
	}
	var run bytes.Buffer
	printReport(&run, &patrol.Report{RunID: "r1", Trigger: "manual", Status: "critical", Analysis: "model",
		Findings: []patrol.FindingRef{{ID: "f1", Key: "k" + hostile, ResourceID: "vm/" + hostile, Severity: "critical", Change: findings.ChangeNew, Title: "t" + hostile}},
		Errors:   []string{"err" + hostile}}, true)
	want = "run r1  trigger=manual  status=critical  analysis=model  0ms\n" +
		"resources: node 0, vm 0, container 0, storage 0, disk 0\n" +
		"signals: 0 (unmatched by the model: 0)\nfindings:\n" +
		"  NEW       critical f1               k" + hostileEscaped + " vm/" + hostileEscaped + " t" + hostileEscaped + "\n" +
		"resolved: 0\nerror: err" + hostileEscaped + "\n"
	if run.String() != want {
		t.Errorf("run report:\n got %q\nwant %q", run.String(), want)
	}
}
