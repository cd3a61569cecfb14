package config_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/snapshot/sources"
)

// Several sources, as docs/SOURCES.md#several-sources writes them.
const sourcesYAML = `
sources:
  - name: pve
    kind: proxmox
    proxmox:
      url: https://pve1.example:8006
      token_id: patrold@pve!patrol
      token_secret_file: /etc/patrold/pve.token
  - name: extra
    kind: file
    file: {path: /var/lib/patrold/extra.json}
`

func TestSourcesList(t *testing.T) {
	cfg, err := config.Load([]byte(sourcesYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	pve := sources.DefaultMember()
	pve.Name, pve.Kind = "pve", "proxmox"
	pve.Proxmox.URL, pve.Proxmox.TokenID, pve.Proxmox.TokenSecretFile = "https://pve1.example:8006", "patrold@pve!patrol", "/etc/patrold/pve.token"
	extra := sources.DefaultMember()
	extra.Name, extra.Kind, extra.File.Path = "extra", "file", "/var/lib/patrold/extra.json"
	if want := []sources.Member{pve, extra}; !reflect.DeepEqual(cfg.Sources, want) {
		t.Errorf("sources:\n got %+v\nwant %+v", cfg.Sources, want)
	}
	// The source section is left at its defaults and keeps its probe.
	if !reflect.DeepEqual(cfg.Source, sources.DefaultConfig()) {
		t.Errorf("source: %+v", cfg.Source)
	}
	if got := sources.Describe(cfg.Source, cfg.Sources); got != "pve(proxmox)+extra(file)" {
		t.Errorf("described as %q", got)
	}
	// Without a list, source: is exactly what it was.
	if cfg, err := config.Load([]byte("source: {kind: file, file: {path: /x.json}}"), nil); err != nil || len(cfg.Sources) != 0 ||
		sources.Describe(cfg.Source, cfg.Sources) != "file" {
		t.Errorf("single source: %v %+v", err, cfg)
	}
}

func TestSourcesListErrorsNameTheirKeys(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"sources: [{kind: demo}]", "sources[0].name: required"},
		{"sources: [{name: Big One, kind: demo}]", `sources[0].name: "Big One" must be 1-32 lower-case letters, digits, '_' or '-', starting with a letter or digit`},
		{"sources: [{name: a, kind: demo}, {name: a, kind: demo}]", `sources[1].name: duplicate source name "a"`},
		{"sources: [{name: a, kind: ftp}]", `sources[0].kind: "ftp" is not one of demo, file, exec, prometheus, proxmox, pbs`},
		{"sources: [{name: a, kind: proxmox}]", "sources[0].proxmox.url: required (e.g. https://pve1.example:8006)"},
		{"sources: [{name: a, kind: file}]", "sources[0].file.path: required when source.kind is file"},
		{"sources: [{name: a, kind: demo, demo: {fault_rate: 2}}]", "sources[0].demo.fault_rate"},
		{"sources: [{name: a, kind: demo, ftp: 1}]", "sources[0].ftp: unknown key"},
		{"source: {kind: proxmox}\nsources: [{name: a, kind: demo}]", `sources: set either source.kind or sources, not both (source.kind is "proxmox")`},
		{"source: {probe: {concurrency: -1}}\nsources: [{name: a, kind: demo}]", "source.probe.concurrency"},
	} {
		_, err := config.Load([]byte(c.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %q", c.yaml, err, c.want)
		}
	}
}
