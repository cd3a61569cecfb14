package main

import (
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/patrold/patrold/config"
)

// ServiceUser is the account the package's unit runs as. Without it the
// unit (deploy/patrold.service) runs with DynamicUser=yes.
const ServiceUser = "patrold"

// serviceAccount is who the service runs as: the package's account, or a
// dynamic user that owns no file and is in no file's group (uid -1).
type serviceAccount struct {
	name     string
	uid, gid int64
}

func lookupService() serviceAccount {
	u, err := user.Lookup(ServiceUser)
	if err != nil {
		return serviceAccount{name: "the service's dynamic user (DynamicUser=yes)", uid: -1, gid: -1}
	}
	uid, err1 := strconv.ParseInt(u.Uid, 10, 64)
	gid, err2 := strconv.ParseInt(u.Gid, 10, 64)
	if err1 != nil || err2 != nil {
		return serviceAccount{name: "the service's dynamic user (DynamicUser=yes)", uid: -1, gid: -1}
	}
	return serviceAccount{name: "user " + ServiceUser, uid: uid, gid: gid}
}

// blocked returns the path component that keeps acc from reading path
// (a directory it cannot search, or the file it cannot read), with its
// mode and owner; "" when acc can read it.
func (acc serviceAccount) blocked(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	var chain []string
	for p := abs; ; p = filepath.Dir(p) {
		chain = append([]string{p}, chain...)
		if p == filepath.Dir(p) {
			break
		}
	}
	for i, p := range chain {
		fi, err := os.Stat(p)
		if err != nil {
			return "" // a missing file is the check's own error
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return ""
		}
		want := uint32(4) // read the file
		if i < len(chain)-1 {
			want = 1 // search the directory
		}
		perm := uint32(fi.Mode().Perm())
		var bits uint32
		switch {
		case int64(st.Uid) == acc.uid:
			bits = perm >> 6
		case int64(st.Gid) == acc.gid:
			bits = perm >> 3
		default:
			bits = perm
		}
		if bits&want == 0 {
			return fmt.Sprintf("%s is mode %04o owned by %s:%s", p, perm, owner(st.Uid), group(st.Gid))
		}
	}
	return ""
}

func owner(uid uint32) string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		return u.Username
	}
	return strconv.FormatUint(uint64(uid), 10)
}

func group(gid uint32) string {
	if g, err := user.LookupGroupId(strconv.FormatUint(uint64(gid), 10)); err == nil {
		return g.Name
	}
	return strconv.FormatUint(uint64(gid), 10)
}

// warnServiceAccess tells, for `config check` run as root, each file the
// service's user could not read: the configuration itself and every file
// key not passed as a credential. Root reads anything, so without this
// the check passes and the service fails with "permission denied".
func warnServiceAccess(w io.Writer, cfgPath string, cfg *config.Config, acc serviceAccount) int {
	n := 0
	if cfgPath != "" {
		if why := acc.blocked(cfgPath); why != "" {
			fmt.Fprintf(w, "warning: --config: %s cannot read %s: %s\n", acc.name, cfgPath, why)
			n++
		}
	}
	for _, f := range config.Files(cfg, config.CredentialsDir(os.Environ())) {
		if f.Credential {
			continue // systemd copies it for the service's user
		}
		//mutate:config-check-service-access ./cmd/patrold ^TestConfigCheckAsRootWarns
		if why := acc.blocked(f.Path); why != "" {
			fmt.Fprintf(w, "warning: %s: %s cannot read %s: %s; pass it with LoadCredential= and name %s%s (docs/OPERATIONS.md#secrets)\n",
				f.Key, acc.name, f.Path, why, config.CredentialsRef, filepath.Base(f.Path))
			n++
		}
	}
	return n
}
