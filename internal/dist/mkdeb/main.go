// Command mkdeb builds patrold's .deb from the pieces `make dist` built.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/patrold/patrold/internal/dist"
)

func main() {
	var o dist.Options
	flag.StringVar(&o.Version, "version", "", "release version (git describe: v0.x.y[-N-gHASH])")
	flag.StringVar(&o.Dir, "dir", "dist", "directory with patrold, man/ and completions/; the .deb is written there")
	flag.StringVar(&o.Repo, "repo", ".", "repository root")
	flag.StringVar(&o.Arch, "arch", "amd64", "Debian architecture")
	flag.Parse()
	out, err := dist.Deb(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkdeb:", err)
		os.Exit(1)
	}
	fmt.Println(out)
}
