// Package probe fills in the reachability of running guests by TCP connect:
// a guest whose source left reachable unknown (null) and that lists
// host:port addresses is reachable when any of them accepts a connection.
package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/snapshot"
)

// Defaults for Options.
const (
	DefaultTimeout     = 2 * time.Second
	DefaultConcurrency = 16
)

// Options configure the prober (suggested YAML section source.probe).
type Options struct {
	// Timeout bounds one TCP connect. Zero means DefaultTimeout.
	Timeout time.Duration `koanf:"timeout" yaml:"timeout" json:"timeout"`
	// Concurrency bounds the connects in flight across all guests. Zero
	// means DefaultConcurrency.
	Concurrency int `koanf:"concurrency" yaml:"concurrency" json:"concurrency"`

	// Registerer receives the prober's metrics; nil disables them.
	Registerer promclient.Registerer `koanf:"-" yaml:"-" json:"-"`
	// Metrics, when set, are used instead of registering new ones on
	// Registerer (a prober rebuilt on reload).
	Metrics *Metrics `koanf:"-" yaml:"-" json:"-"`
}

// Validate reports every problem, each naming its key under source.probe.
func (o Options) Validate() error {
	var errs []error
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("source.probe.timeout: must not be negative, got %s", o.Timeout))
	}
	if o.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("source.probe.concurrency: must not be negative, got %d", o.Concurrency))
	}
	return errors.Join(errs...)
}

// Prober probes guests. It is safe for concurrent use.
type Prober struct {
	timeout     time.Duration
	concurrency int
	metrics     *metrics
	dial        func(ctx context.Context, network, address string) (net.Conn, error)
}

// New validates opts and builds a Prober.
func New(opts Options) (*Prober, error) { return NewDialing(opts, nil) }

// NewDialing is New connecting with dial (a test's network); nil dial
// is a net.Dialer's.
func NewDialing(opts Options, dial func(ctx context.Context, network, address string) (net.Conn, error)) (*Prober, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = DefaultConcurrency
	}
	var m *metrics
	if opts.Metrics != nil {
		m = opts.Metrics.m
	} else {
		var err error
		if m, err = newMetrics(opts.Registerer); err != nil {
			return nil, err
		}
	}
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return &Prober{timeout: opts.Timeout, concurrency: opts.Concurrency, metrics: m, dial: dial}, nil
}

// Outcome classifies one address probe.
type Outcome string

// Outcomes of one address.
const (
	OutcomeOpen      Outcome = "open"      // the connect succeeded
	OutcomeFailed    Outcome = "failed"    // refused, unreachable or no answer within the timeout
	OutcomeInvalid   Outcome = "invalid"   // not host:port; not probed
	OutcomeCancelled Outcome = "cancelled" // the caller's context ended first; says nothing about the guest
	// OutcomeUnroutable: the patrol host's own network stack could not
	// send (network unreachable, no route to host, no local address):
	// not probed, and nothing about the guest.
	OutcomeUnroutable Outcome = "unroutable"
)

// Outcomes lists every outcome (the metric label values).
var Outcomes = []Outcome{OutcomeOpen, OutcomeFailed, OutcomeInvalid, OutcomeCancelled, OutcomeUnroutable}

// Address is the result for one address of one guest.
type Address struct {
	ResourceID string        `json:"resource_id"`
	Address    string        `json:"address"`
	OK         bool          `json:"ok"`
	Outcome    Outcome       `json:"outcome"`
	Error      string        `json:"error,omitempty"`
	Duration   time.Duration `json:"-"` // rendered as duration_ms
}

// MarshalJSON renders Duration as fractional milliseconds, like the run report.
func (a Address) MarshalJSON() ([]byte, error) {
	type wire Address
	return json.Marshal(struct {
		wire
		DurationMS float64 `json:"duration_ms"`
	}{wire(a), float64(a.Duration.Microseconds()) / 1000})
}

// Result summarises one Probe call.
type Result struct {
	At          time.Time `json:"at"`
	Guests      int       `json:"guests"`      // candidate guests
	Reachable   int       `json:"reachable"`   // set to true
	Unreachable int       `json:"unreachable"` // set to false
	Unknown     int       `json:"unknown"`     // left null: nothing could be probed
	Addresses   []Address `json:"addresses"`   // per address, in resource then address order
	// Unroutable lists, once per network, the addresses the patrol host
	// could not send to: a probe problem, not the guests'.
	Unroutable []Unroutable `json:"unroutable,omitempty"`
}

// Unroutable is one network (an IPv4 /24 or an IPv6 /64) the patrol
// host had no route to.
type Unroutable struct {
	Network   string `json:"network"`
	Error     string `json:"error"`     // the first address's error
	Addresses int    `json:"addresses"` // addresses in it not probed
}

// Incomplete reports whether some address was not probed because the
// caller's context ended or the patrol host had no route to it: the run
// had a gap and should be degraded.
func (r Result) Incomplete() bool {
	for _, a := range r.Addresses {
		if a.Outcome == OutcomeCancelled || a.Outcome == OutcomeUnroutable {
			return true
		}
	}
	return false
}

// unroutable groups the unroutable addresses by network, in address order.
func unroutable(as []Address) []Unroutable {
	var out []Unroutable
	index := map[string]int{}
	for _, a := range as {
		if a.Outcome != OutcomeUnroutable {
			continue
		}
		n := NetworkOf(a.Address)
		if i, ok := index[n]; ok {
			out[i].Addresses++
			continue
		}
		index[n] = len(out)
		out = append(out, Unroutable{Network: n, Error: a.Error, Addresses: 1})
	}
	return out
}

// NetworkOf is the network Unroutable groups an address under: the
// /24 (IPv4) or /64 (IPv6) of a host:port address, or
// its host when that is a name.
func NetworkOf(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	bits := 64
	if ip.Is4() || ip.Is4In6() {
		ip, bits = ip.Unmap(), 24
	}
	p, err := ip.Prefix(bits)
	if err != nil {
		return host
	}
	return p.String()
}

// localStackError reports whether a dial failed in the patrol host's own
// network stack rather than at the guest.
func localStackError(err error) bool {
	return errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.EADDRNOTAVAIL)
}

// Candidate reports whether the prober decides r's reachability: a running
// VM or container with addresses and no verdict from the source.
func Candidate(r *snapshot.Resource) bool {
	return r.Kind.Guest() && r.Status == snapshot.StatusRunning && len(r.Addresses) > 0 && r.Reachable == nil
}

// Probe connects to every address of every candidate guest and sets their
// Reachable field in place (see verdict). One failed or invalid address never
// discards the results of the others. now stamps the result.
func (p *Prober) Probe(ctx context.Context, snap *snapshot.Snapshot, now time.Time) Result {
	res := Result{At: now}
	type job struct{ guest, slot int }
	var jobs []job
	var guests []int
	for i := range snap.Resources {
		r := &snap.Resources[i]
		if !Candidate(r) {
			continue
		}
		guests = append(guests, i)
		for _, a := range r.Addresses {
			res.Addresses = append(res.Addresses, Address{ResourceID: r.ID, Address: a})
			jobs = append(jobs, job{guest: i, slot: len(res.Addresses) - 1})
		}
	}
	res.Guests = len(guests)

	sem := make(chan struct{}, p.concurrency)
	var wg sync.WaitGroup
	for _, j := range jobs {
		a := &res.Addresses[j.slot] // each goroutine writes only its own slot
		if err := validAddress(a.Address); err != nil {
			a.Outcome, a.Error = OutcomeInvalid, err.Error()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
				p.connect(ctx, a)
			case <-ctx.Done():
				a.Outcome, a.Error = OutcomeCancelled, "not probed: "+ctx.Err().Error()
			}
		}()
	}
	wg.Wait()

	byGuest := map[int][]Outcome{} // keyed by resource index, not id
	for _, j := range jobs {
		o := res.Addresses[j.slot].Outcome
		byGuest[j.guest] = append(byGuest[j.guest], o)
		p.metrics.address(o)
	}
	for _, i := range guests {
		r := &snap.Resources[i]
		r.Reachable = verdict(byGuest[i])
		switch {
		case r.Reachable == nil:
			res.Unknown++
		case *r.Reachable:
			res.Reachable++
		default:
			res.Unreachable++
		}
		p.metrics.guest(r.Reachable)
	}
	res.Unroutable = unroutable(res.Addresses)
	return res
}

// verdict: any open address makes a guest reachable; a cancelled or
// unroutable address might have answered, so without an open one it leaves the verdict
// unknown; otherwise a failed address makes it unreachable. Invalid
// addresses never count.
func verdict(outcomes []Outcome) *bool {
	failed := false
	cancelled := false
	for _, o := range outcomes {
		switch o {
		case OutcomeOpen:
			return ptr(true)
		case OutcomeFailed:
			failed = true
		case OutcomeCancelled, OutcomeUnroutable:
			cancelled = true
		}
	}
	if failed && !cancelled {
		return ptr(false)
	}
	return nil
}

func (p *Prober) connect(ctx context.Context, a *Address) {
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	conn, err := p.dial(dctx, "tcp", a.Address)
	a.Duration = time.Since(start)
	timedOut := err != nil && (dctx.Err() != nil || isTimeout(err))
	// When the caller's deadline comes before ours, a timeout is the
	// caller's (the dial may return a moment before ctx.Err is set).
	dl, ok := ctx.Deadline()
	callerFirst := ok && dl.Before(start.Add(p.timeout))
	switch {
	case err == nil:
		a.OK, a.Outcome = true, OutcomeOpen
		_ = conn.Close()
	case ctx.Err() != nil || (timedOut && callerFirst):
		a.Outcome, a.Error = OutcomeCancelled, "not probed: the run's context ended first"
	case timedOut:
		a.Outcome, a.Error = OutcomeFailed, fmt.Sprintf("no answer within %s", p.timeout)
	case localStackError(err):
		a.Outcome, a.Error = OutcomeUnroutable, "not probed: "+err.Error()
	default:
		a.Outcome, a.Error = OutcomeFailed, err.Error()
	}
}

// validAddress accepts host:port with a non-empty host and a port in 1..65535.
func validAddress(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("not probed: %q is not host:port", addr)
	}
	n, err := strconv.Atoi(port)
	if host == "" || err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("not probed: %q is not host:port with a port in 1..65535", addr)
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func ptr(b bool) *bool { return &b }

// DefaultOptions is the source.probe section's defaults.
func DefaultOptions() Options {
	return Options{Timeout: DefaultTimeout, Concurrency: DefaultConcurrency}
}
