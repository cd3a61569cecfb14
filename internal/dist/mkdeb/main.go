// Command mkdeb builds patrold's .deb from the pieces `make dist` built.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/patrold/patrold/internal/dist"
)

func main() {
	var o dist.Options
	flag.StringVar(&o.Version, "version", "", "release version (git describe: v0.x.y[-N-gHASH])")
	flag.StringVar(&o.Dir, "dir", "dist", "directory with patrold, man/ and completions/; the .deb is written there")
	flag.StringVar(&o.Repo, "repo", ".", "repository root")
	flag.StringVar(&o.Arch, "arch", "amd64", "Debian architecture")
	epoch := flag.String("mtime", os.Getenv("SOURCE_DATE_EPOCH"), "file dates in Unix seconds (default $SOURCE_DATE_EPOCH: the commit time)")
	flag.Parse()
	sec, err := strconv.ParseInt(*epoch, 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mkdeb: -mtime (SOURCE_DATE_EPOCH): %q is not Unix seconds\n", *epoch)
		os.Exit(2)
	}
	o.MTime = time.Unix(sec, 0)
	out, err := dist.Deb(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkdeb:", err)
		os.Exit(1)
	}
	fmt.Println(out)
}
