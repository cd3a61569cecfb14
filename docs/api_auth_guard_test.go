package docs

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/api"
)

var (
	throttleBound = regexp.MustCompile("may fail `([0-9]+)` times at once, then once more every `([^`]+)`")
	throttleTable = regexp.MustCompile(`keeps at most ([0-9]+) addresses`)
	minLength     = regexp.MustCompile(`A secret has at least ([0-9]+) characters`)
	lengthExample = regexp.MustCompile("\\(`(http\\.tokens\\[0\\]\\.token: [^`]+)`")
)

// apiAuthProblems compares what API.md states of tokens and throttling
// with the code: the numbers are read from the page, so a change on
// either side fails.
func apiAuthProblems(doc string) []string {
	var p []string
	sec := section(doc, "Authentication")
	m := throttleBound.FindStringSubmatch(sec)
	if m == nil {
		return append(p, "the Throttling section does not state the bound (may fail `N` times at once, then once more every `D`)")
	}
	if n, _ := strconv.Atoi(m[1]); n != api.AuthFailureBurst {
		p = append(p, "burst "+m[1]+", the code says "+strconv.Itoa(api.AuthFailureBurst))
	}
	if d, err := time.ParseDuration(m[2]); err != nil || d != api.AuthFailureEvery {
		p = append(p, "refill every "+m[2]+", the code says "+api.AuthFailureEvery.String())
	}
	if m := throttleTable.FindStringSubmatch(sec); m == nil || m[1] != strconv.Itoa(api.MaxThrottledAddresses) {
		p = append(p, "the address table's bound is not "+strconv.Itoa(api.MaxThrottledAddresses))
	}
	if m := minLength.FindStringSubmatch(sec); m == nil || m[1] != strconv.Itoa(api.MinTokenLength) {
		p = append(p, "the minimum token length is not "+strconv.Itoa(api.MinTokenLength))
	}
	// The quoted refusal is the one config check prints.
	cfg := api.DefaultHTTPConfig()
	cfg.Tokens = []api.TokenConfig{{Name: "ops", Token: "hunter2", Scope: "admin"}}
	err := cfg.Validate()
	if m := lengthExample.FindStringSubmatch(sec); m == nil || err == nil || m[1] != err.Error() {
		p = append(p, "the short-token example is not what config check says: "+errText(err))
	}
	for _, want := range []string{"`" + string(api.CodeAuthThrottled) + "`", "`Retry-After`", "`trigger`", "`429`"} {
		if !strings.Contains(sec, want) {
			p = append(p, "the Authentication section does not name "+want)
		}
	}
	return p
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestAPIAuthDocMatchesCode(t *testing.T) {
	doc := readDoc(t, "API.md")
	if p := apiAuthProblems(doc); len(p) != 0 {
		t.Fatalf("docs/API.md (Authentication, Throttling):\n%s", strings.Join(p, "\n"))
	}
	// The guard sees drift in the page.
	for _, broken := range []string{
		strings.Replace(doc, "may fail `20` times", "may fail `50` times", 1),
		strings.Replace(doc, "then once more every `3s`", "then once more every `1s`", 1),
		strings.Replace(doc, "at least 16 characters", "at least 12 characters", 1),
		strings.Replace(doc, "7 characters; a token", "7 chars; a token", 1),
	} {
		if broken == doc {
			t.Fatal("a drift case no longer applies to the page")
		}
		if len(apiAuthProblems(broken)) == 0 {
			t.Fatal("the guard missed a drift")
		}
	}
}
