package driver

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/informerdb/informerdb/store"
)

// Params reads a URL's query parameters for a driver and rejects the ones the
// driver did not ask for. Typical use:
//
//	p := driver.NewParams(u)
//	opts.Durability = store.Durability(p.String("durability", string(opts.Durability)))
//	opts.CacheSize = p.Int("cache", opts.CacheSize)
//	if err := p.Err(); err != nil {
//		return nil, err
//	}
type Params struct {
	u     *url.URL
	q     url.Values
	known []string
	err   error
}

// NewParams starts reading u's query parameters. A query that does not
// parse (a bad %-escape, a ';' separator) makes Err fail rather than drop
// the parameters it holds, as url.URL.Query would.
func NewParams(u *url.URL) *Params {
	p := &Params{u: u}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		p.err = fmt.Errorf("store: open %s: malformed query %q: %w: %w", redact(u), u.RawQuery, store.ErrInvalid, err)
	}
	p.q = q
	return p
}

func (p *Params) take(name string) (string, bool) {
	p.known = append(p.known, name)
	vs, ok := p.q[name]
	if !ok {
		return "", false
	}
	if len(vs) != 1 && p.err == nil {
		p.err = fmt.Errorf("store: open %s: parameter %q given %d times: %w", redact(p.u), name, len(vs), store.ErrInvalid)
	}
	return vs[len(vs)-1], true
}

func (p *Params) fail(name, v, want string, err error) {
	if p.err == nil {
		p.err = fmt.Errorf("store: open %s: parameter %s=%q: want %s: %w: %w", redact(p.u), name, v, want, store.ErrInvalid, err)
	}
}

// String returns the parameter's value, or def when it is absent.
func (p *Params) String(name, def string) string {
	if v, ok := p.take(name); ok {
		return v
	}
	return def
}

// Int returns the parameter as a non-negative integer, or def.
func (p *Params) Int(name string, def int) int {
	return param(p, name, def, "a non-negative integer", strconv.Atoi)
}

// Duration returns the parameter as a non-negative time.Duration ("5s"), or def.
func (p *Params) Duration(name string, def time.Duration) time.Duration {
	return param(p, name, def, "a duration such as 5s", time.ParseDuration)
}

// Bytes returns the parameter as a non-negative number of bytes written as
// a Kubernetes quantity ("128Mi", "1G", "0"), or def.
func (p *Params) Bytes(name string, def int64) int64 {
	return param(p, name, def, "a quantity of bytes such as 128Mi", func(v string) (int64, error) {
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Sign() < 0 {
			return -1, err // param says "negative" when err is nil
		}
		n, exact := q.AsInt64()
		if !exact {
			return 0, fmt.Errorf("not a whole number of bytes below 2^63")
		}
		return n, nil
	})
}

// param returns the parameter name parsed by parse, which must not be
// negative, or def; want says what is expected, for the error.
func param[T int | int64 | time.Duration](p *Params, name string, def T, want string, parse func(string) (T, error)) T {
	v, ok := p.take(name)
	if !ok {
		return def
	}
	n, err := parse(v)
	if err == nil && n < 0 {
		err = fmt.Errorf("negative")
	}
	if err != nil {
		p.fail(name, v, want, err)
		return def
	}
	return n
}

// LockTimeoutHint ends the errors of a backend's Open that gave up waiting
// for a database another process holds (ErrLocked): how to wait longer.
const LockTimeoutHint = "to wait longer, add lock_timeout=<duration> to the URL (e.g. ?lock_timeout=30s) or set Options.LockTimeout"

// Common reads the parameters every persistent backend shares into o:
// durability, lock_timeout (positive) and cache. A backend that supports
// only some of them reads those itself.
func (p *Params) Common(o *store.Options) {
	o.Durability = store.Durability(p.String("durability", string(o.Durability)))
	switch o.Durability {
	case store.DurabilitySync, store.DurabilityNoSync:
	default:
		p.fail("durability", string(o.Durability), `"sync" or "nosync"`, fmt.Errorf("unknown durability"))
	}
	if lt := p.Duration("lock_timeout", o.LockTimeout); lt == 0 && p.q.Has("lock_timeout") {
		// A 0 from the URL would reach the backend as is (Options'
		// 0 means the default), and bbolt waits for ever on 0.
		p.fail("lock_timeout", p.q.Get("lock_timeout"), "a positive duration such as 5s", fmt.Errorf("zero"))
	} else {
		o.LockTimeout = lt
	}
	o.CacheSize = p.Int("cache", o.CacheSize)
}

// Err returns the first malformed parameter, or names the parameters that
// were not asked for together with the ones that are valid.
func (p *Params) Err() error {
	if p.err != nil {
		return p.err
	}
	var unknown []string
	for name := range p.q {
		if !slices.Contains(p.known, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	for i, name := range unknown {
		unknown[i] = strconv.Quote(name)
	}
	v := "none"
	if len(p.known) > 0 {
		v = strings.Join(slices.Sorted(slices.Values(p.known)), ", ")
	}
	return fmt.Errorf("store: open %s: unknown parameter %s; %s accepts: %s: %w",
		redact(p.u), strings.Join(unknown, ", "), p.u.Scheme, v, store.ErrInvalid)
}

// AbsPath returns the cleaned path of u, which must name a database by an
// absolute path (scheme:///abs/path, three slashes), or an error wrapping
// store.ErrInvalid that shows want, the form the backend takes.
func AbsPath(u *url.URL, want string) (string, error) {
	if u.Host != "" || u.Opaque != "" || !filepath.IsAbs(u.Path) {
		return "", fmt.Errorf("want %s (three slashes): %w", want, store.ErrInvalid)
	}
	return filepath.Clean(u.Path), nil
}

// redact drops user info from a URL before it goes into an error.
func redact(u *url.URL) string {
	return u.Scheme + "://" + u.Host + u.Path
}
