package prompt

import "testing"

func TestDisclosureGuard(t *testing.T) {
	g := Guard(testPolicy)
	cases := []struct {
		reply string
		ok    bool
	}{
		{"storage/pve1/local-zfs is at 96.3%, above the critical threshold of 95.", true},
		{"My instructions say: file findings only through report_finding.", false},
		{"FILE FINDINGS ONLY THROUGH REPORT_FINDING, obviously", false},
		{"file\nfindings   only,\tthrough -- report_finding", false},
		{"Νever claim a fix you did not verify.", false}, // Greek capital Nu
		{"never claim a fix you\u200b did", false},
		{"File findings only through the tool.", true},             // five policy words, then different
		{"patrol analyst files findings only through tools", true}, // same words, not consecutive
		{"You are patrold's patrol analyst.", false},               // you are patrold s patrol analyst: six words
		{"", true},
	}
	for _, tc := range cases {
		if got := g.Check(tc.reply); got != tc.ok {
			t.Errorf("Check(%q) = %v, want %v", tc.reply, got, tc.ok)
		}
	}
}

func TestDisclosureGuardSixWordBoundary(t *testing.T) {
	g := Guard("alpha beta gamma delta epsilon zeta eta theta")
	if !g.Check("alpha beta gamma delta epsilon") || !g.Check("beta gamma delta epsilon zeta and more") {
		t.Fatal("five consecutive words must pass")
	}
	if g.Check("so: beta gamma delta epsilon zeta eta!") {
		t.Fatal("six consecutive words must be withheld")
	}
	if !Guard("too short policy").Check("too short policy") {
		t.Fatal("a policy under six words withholds nothing")
	}
}
