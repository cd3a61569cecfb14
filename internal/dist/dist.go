// Package dist builds patrold's Debian package with nfpm as a library:
// the stripped binary, the hardened systemd unit, a default
// configuration, the patrold user and its directories (systemd-sysusers
// and systemd-tmpfiles), man pages, shell completions and the docs.
// `make dist` runs it through ./internal/dist/mkdeb.
package dist

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
)

//go:embed files
var packageFiles embed.FS

// Options say where the built pieces are.
type Options struct {
	// Version is the release version from git (v0.x.y, or
	// v0.x.y-N-gHASH between tags).
	Version string
	// Dir holds the built pieces: patrold, man/*.1 and
	// completions/patrold.{bash,zsh,fish}; the package is written there.
	Dir string
	// Repo is the repository root (the unit, the default configuration
	// and the docs are read from it).
	Repo string
	// Arch is the Debian architecture (default amd64).
	Arch string
	// MTime stamps every file and dates the changelog: the commit time
	// (SOURCE_DATE_EPOCH), so a build is reproducible. It is required.
	MTime time.Time
}

var releaseVersion = regexp.MustCompile(`^v(\d+\.\d+\.\d+)(?:-(\d+)-g([0-9a-f]+))?(-dirty)?$`)

// DebVersion maps a git version to a Debian one: v0.3.1 is 0.3.1, and
// v0.3.1-4-gabc123 (four commits later) is 0.3.1+git4.gabc123, which
// sorts after the tag and before the next one.
func DebVersion(v string) (string, error) {
	m := releaseVersion.FindStringSubmatch(v)
	if m == nil {
		return "", fmt.Errorf("version: %q is not v<major>.<minor>.<patch>[-N-gHASH][-dirty] (tag releases v0.x.y)", v)
	}
	out := m[1]
	if m[2] != "" {
		out += "+git" + m[2] + ".g" + m[3]
	}
	switch {
	case m[4] != "" && m[2] == "":
		out += "+dirty"
	case m[4] != "":
		out += ".dirty"
	}
	return out, nil
}

// PackagedUnit is deploy/patrold.service as the package installs it: the
// binary under /usr/bin, and the package's patrold user instead of a
// dynamic one (the user owns /var/lib/patrold and reads the config).
func PackagedUnit(unit string) (string, error) {
	out := unit
	for _, r := range [][2]string{
		{"ExecStart=/usr/local/bin/patrold ", "ExecStart=/usr/bin/patrold "},
		{"\nDynamicUser=yes\n", "\nUser=patrold\nGroup=patrold\n"},
	} {
		if !strings.Contains(out, r[0]) {
			return "", fmt.Errorf("deploy/patrold.service: no %q to replace", strings.TrimSpace(r[0]))
		}
		out = strings.Replace(out, r[0], r[1], 1)
	}
	return out, nil
}

// Maintainer is the project's address in the package and its changelog.
const Maintainer = "patrold maintainers <maintainers@patrold.dev>"

// Changelog is the Debian changelog of a build: one entry for its
// version, dated at the commit. CHANGELOG.md carries the history.
func Changelog(ver string, at time.Time) string {
	return fmt.Sprintf("patrold (%s) unstable; urgency=medium\n\n"+
		"  * Built from the patrold repository; its CHANGELOG.md has the\n"+
		"    changes.\n\n"+
		" -- %s  %s\n", ver, Maintainer, at.UTC().Format(time.RFC1123Z))
}

var glibcVersion = regexp.MustCompile(`^GLIBC_(\d+)\.(\d+)(?:\.(\d+))?$`)

// LibcDepends reads the binary's GLIBC_x.y symbol versions and returns
// the libc6 dependency the newest of them needs.
func LibcDepends(bin string) (string, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return "", fmt.Errorf("binary: %w", err)
	}
	defer f.Close()
	syms, err := f.ImportedSymbols()
	if err != nil {
		return "", fmt.Errorf("binary %s: imported symbols: %w", bin, err)
	}
	var best [3]int
	found := ""
	for _, s := range syms {
		m := glibcVersion.FindStringSubmatch(s.Version)
		if m == nil {
			continue
		}
		var v [3]int
		for i := range v {
			v[i], _ = strconv.Atoi(m[i+1])
		}
		if found == "" || slices.Compare(v[:], best[:]) > 0 {
			best, found = v, strings.TrimPrefix(s.Version, "GLIBC_")
		}
	}
	if found == "" {
		return "", fmt.Errorf("binary %s: no GLIBC_ symbol versions (a static build needs no libc6; patrold links libc)", bin)
	}
	return "libc6 (>= " + found + ")", nil
}

// Deb builds the package and returns its path.
func Deb(o Options) (string, error) {
	ver, err := DebVersion(o.Version)
	if err != nil {
		return "", err
	}
	if o.Arch == "" {
		o.Arch = "amd64"
	}
	// Files dated 1970 are an error to lintian (package-contains-ancient-file).
	if o.MTime.Before(time.Date(1995, 1, 1, 0, 0, 0, 0, time.UTC)) {
		return "", fmt.Errorf("mtime: %v is not a commit time (set SOURCE_DATE_EPOCH)", o.MTime.UTC())
	}
	o.MTime = o.MTime.UTC()
	stage, err := os.MkdirTemp("", "patrold-dist-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(stage)
	write := func(name string, data []byte) (string, error) {
		p := filepath.Join(stage, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		return p, os.WriteFile(p, data, 0o644)
	}
	var contents files.Contents
	add := func(src, dst string, mode os.FileMode, typ string) {
		contents = append(contents, &files.Content{Source: src, Destination: dst, Type: typ,
			FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: mode, MTime: o.MTime}})
	}
	bin := filepath.Join(o.Dir, "patrold")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("binary: %w", err)
	}
	add(bin, "/usr/bin/patrold", 0o755, "")
	libc, err := LibcDepends(bin)
	if err != nil {
		return "", err
	}

	unit, err := os.ReadFile(filepath.Join(o.Repo, "deploy", "patrold.service"))
	if err != nil {
		return "", err
	}
	pu, err := PackagedUnit(string(unit))
	if err != nil {
		return "", err
	}
	p, err := write("patrold.service", []byte(pu))
	if err != nil {
		return "", err
	}
	add(p, "/usr/lib/systemd/system/patrold.service", 0o644, "")
	add(filepath.Join(o.Repo, "deploy", "patrold.example.yaml"), "/etc/patrold/patrold.yaml", 0o640, files.TypeConfigNoReplace)

	// The licence in Debian's machine-readable copyright format (DEP-5).
	for name, dst := range map[string]string{"sysusers.conf": "/usr/lib/sysusers.d/patrold.conf", "tmpfiles.conf": "/usr/lib/tmpfiles.d/patrold.conf",
		"copyright": "/usr/share/doc/patrold/copyright", "lintian-overrides": "/usr/share/lintian/overrides/patrold"} {
		data, err := packageFiles.ReadFile("files/" + name)
		if err != nil {
			return "", err
		}
		p, err := write(name, data)
		if err != nil {
			return "", err
		}
		add(p, dst, 0o644, "")
	}

	gzipped := func(data []byte) ([]byte, error) {
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		zw.ModTime = o.MTime
		if _, err := zw.Write(data); err != nil {
			return nil, err
		}
		err := zw.Close()
		return gz.Bytes(), err
	}
	// A version without a Debian revision is a native package: lintian
	// wants its changelog as changelog.gz in Debian's format.
	cl, err := gzipped([]byte(Changelog(ver, o.MTime)))
	if err != nil {
		return "", err
	}
	if p, err = write("changelog.gz", cl); err != nil {
		return "", err
	}
	add(p, "/usr/share/doc/patrold/changelog.gz", 0o644, "")

	pages, err := filepath.Glob(filepath.Join(o.Dir, "man", "*.1"))
	if err != nil || len(pages) == 0 {
		return "", errors.Join(fmt.Errorf("man pages: none under %s (patrold man --dir)", filepath.Join(o.Dir, "man")), err)
	}
	sort.Strings(pages)
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			return "", err
		}
		gz, err := gzipped(data)
		if err != nil {
			return "", err
		}
		p, err := write(filepath.Join("man", filepath.Base(page)+".gz"), gz)
		if err != nil {
			return "", err
		}
		add(p, "/usr/share/man/man1/"+filepath.Base(page)+".gz", 0o644, "")
	}
	for sh, dst := range map[string]string{
		"bash": "/usr/share/bash-completion/completions/patrold",
		"zsh":  "/usr/share/zsh/vendor-completions/_patrold",
		"fish": "/usr/share/fish/vendor_completions.d/patrold.fish",
	} {
		src := filepath.Join(o.Dir, "completions", "patrold."+sh)
		if _, err := os.Stat(src); err != nil {
			return "", fmt.Errorf("completions: %w", err)
		}
		add(src, dst, 0o644, "")
	}
	docs, _ := filepath.Glob(filepath.Join(o.Repo, "docs", "*.md"))
	for _, d := range append(docs, filepath.Join(o.Repo, "README.md")) {
		add(d, "/usr/share/doc/patrold/"+filepath.Base(d), 0o644, "")
	}

	scripts := nfpm.Scripts{}
	for name, dst := range map[string]*string{"postinst": &scripts.PostInstall, "prerm": &scripts.PreRemove, "postrm": &scripts.PostRemove} {
		data, err := packageFiles.ReadFile("files/" + name)
		if err != nil {
			return "", err
		}
		if *dst, err = write(name, data); err != nil {
			return "", err
		}
		if err := os.Chmod(*dst, 0o755); err != nil {
			return "", err
		}
	}

	info := nfpm.WithDefaults(&nfpm.Info{
		Name: "patrold", Arch: o.Arch, Platform: "linux", Version: ver, VersionSchema: "none",
		Section: "admin", Priority: "optional", Maintainer: Maintainer,
		Description: "infrastructure patrol daemon\n" +
			" patrold collects a snapshot of a fleet on a schedule, detects problems\n" +
			" deterministically (and with a language model, optionally), files them as\n" +
			" findings, and publishes them on NATS and as Prometheus metrics.",
		License: "Apache-2.0", MTime: o.MTime,
		Overridables: nfpm.Overridables{
			Contents:   contents,
			Depends:    []string{libc},
			Recommends: []string{"systemd"},
			Scripts:    scripts,
		},
	})
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return "", fmt.Errorf("package: %w", err)
	}
	pkg, err := nfpm.Get("deb")
	if err != nil {
		return "", err
	}
	info.Target = pkg.ConventionalFileName(info)
	out := filepath.Join(o.Dir, info.Target)
	f, err := os.Create(out)
	if err != nil {
		return "", err
	}
	if err := pkg.Package(info, f); err != nil {
		f.Close()
		return "", fmt.Errorf("package: %w", err)
	}
	return out, f.Close()
}
