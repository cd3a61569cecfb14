package api_test

import (
	"os"
	"testing"

	"github.com/patrold/patrold/api"
)

// TestFindingURL: the finding page's address is http.public_url when set
// (a trailing slash dropped), else derived from http.listen, with this
// machine's name for a wildcard host; the id is path-escaped.
func TestFindingURL(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	for _, tc := range []struct{ listen, public, want string }{
		{"127.0.0.1:9477", "", "http://127.0.0.1:9477/ui/findings/a%2Fb%20c"},
		{"[::1]:9477", "", "http://[::1]:9477/ui/findings/a%2Fb%20c"},
		{"0.0.0.0:9477", "", "http://" + host + ":9477/ui/findings/a%2Fb%20c"},
		{":9477", "", "http://" + host + ":9477/ui/findings/a%2Fb%20c"},
		{"127.0.0.1:9477", "https://patrold.example.net/ops/", "https://patrold.example.net/ops/ui/findings/a%2Fb%20c"},
	} {
		c := api.DefaultHTTPConfig()
		c.Listen, c.PublicURL = tc.listen, tc.public
		if got := c.FindingURL("a/b c"); got != tc.want {
			t.Errorf("listen %q public %q: %s, want %s", tc.listen, tc.public, got, tc.want)
		}
	}
}

func TestPublicURLNamesTheKey(t *testing.T) {
	for public, want := range map[string]string{
		"ftp://x":                "http.public_url: scheme \"ftp\" must be http or https",
		"https://":               "http.public_url: host is missing",
		"https://u:p@x":          "http.public_url: must carry no credentials, query or fragment",
		"https://x/?a=1":         "http.public_url: must carry no credentials, query or fragment",
		"http://x:bad port":      "http.public_url: \"http://x:bad port\" is not a URL",
		"https://patrold.local/": "",
	} {
		c := api.DefaultHTTPConfig()
		c.PublicURL = public
		err := c.Validate()
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", public, err)
			}
			continue
		}
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", public, err, want)
		}
	}
}
