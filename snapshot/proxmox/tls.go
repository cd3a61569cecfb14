package proxmox

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrFingerprintMismatch is matched (errors.Is) when the server's leaf
// certificate is not the pinned one.
var ErrFingerprintMismatch = errors.New("server certificate does not match the pinned fingerprint")

// pinError is a pin mismatch naming the key of the pin.
type pinError struct {
	key string // "source.proxmox.tls.fingerprint"
	msg string // what was presented and wanted
}

func (e *pinError) Error() string { return "server certificate does not match " + e.key + ": " + e.msg }

func (e *pinError) Is(target error) bool { return target == ErrFingerprintMismatch }

// parseFingerprint accepts a SHA-256 fingerprint as hex, with or without
// colons, in any case.
func parseFingerprint(s string) ([]byte, error) {
	clean := strings.ReplaceAll(strings.TrimSpace(s), ":", "")
	b, err := hex.DecodeString(clean)
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("want a SHA-256 fingerprint (32 hex bytes, colons optional), got %q", s)
	}
	return b, nil
}

// formatFingerprint renders a fingerprint the way pvenode cert info does.
func formatFingerprint(b []byte) string {
	parts := make([]string, len(b))
	for i, x := range b {
		parts[i] = fmt.Sprintf("%02X", x)
	}
	return strings.Join(parts, ":")
}

// tlsConfig builds the client TLS configuration from the options of the
// section key ("source.proxmox"), which errors name.
func tlsConfig(o TLSOptions, key string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case o.CAFile != "":
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s.tls.ca_file: %w", key, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s.tls.ca_file: %s holds no PEM certificate", key, o.CAFile)
		}
		tc.RootCAs = pool
	case o.Fingerprint != "":
		want, err := parseFingerprint(o.Fingerprint)
		if err != nil {
			return nil, fmt.Errorf("%s.tls.fingerprint: %w", key, err)
		}
		// The pin replaces chain and name verification, which is what
		// InsecureSkipVerify turns off; VerifyConnection runs on every
		// handshake, resumed ones included.
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error { return verifyPin(cs, want, key+".tls.fingerprint") }
	case o.InsecureSkipVerify:
		tc.InsecureSkipVerify = true
	}
	return tc, nil
}

func verifyPin(cs tls.ConnectionState, want []byte, key string) error {
	if len(cs.PeerCertificates) == 0 {
		return &pinError{key, "the server presented no certificate"}
	}
	got := sha256.Sum256(cs.PeerCertificates[0].Raw)
	if subtle.ConstantTimeCompare(got[:], want) != 1 {
		return &pinError{key, fmt.Sprintf("the server presented SHA-256 %s, want %s", formatFingerprint(got[:]), formatFingerprint(want))}
	}
	return nil
}
