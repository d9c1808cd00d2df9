package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/internal/snapfile"
)

// FetchOptions tune Fetch and FetchStatus, which only read them. The zero
// value is fine.
type FetchOptions struct {
	// Client makes the requests. Default http.DefaultClient.
	Client *http.Client
	// Stores, when not empty, selects the stores to fetch by name (Fetch).
	Stores []string
	// TempFile is as SaveOptions.TempFile (Fetch).
	TempFile func(path string)
}

// IsHTTP reports whether target is the http:// or https:// address of a
// Handler rather than a file or a database URL.
func IsHTTP(target string) bool {
	return strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://")
}

// endpoint returns the address of the Handler endpoint name ("snapshot" or
// "status") for rawURL: the prefix the handler is mounted under, or one of
// its endpoints.
func endpoint(rawURL, name string, stores []string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("snapshot: %s: want http://host:port/prefix or https://... (the prefix the handler is mounted under): %w", rawURL, store.ErrInvalid)
	}
	p := strings.TrimSuffix(u.Path, "/")
	if b := path.Base(p); b == "snapshot" || b == "status" {
		p = strings.TrimSuffix(p[:len(p)-len(b)], "/")
	}
	u.Path = p + "/" + name
	u.RawPath = ""
	q := u.Query()
	for _, s := range stores {
		q.Add("store", s)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// get sends a GET request to addr and returns the response if it is a 200
// of media type ctype; otherwise it closes it and returns the Handler's
// error, which wraps the store package's sentinel error it names.
func get(ctx context.Context, o *FetchOptions, addr, ctype string) (*http.Response, error) {
	client := http.DefaultClient
	if o != nil && o.Client != nil {
		client = o.Client
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr, nil)
	if err != nil {
		return nil, fmt.Errorf("snapshot: fetch %s: %w", addr, err)
	}
	req.Header.Set("Accept", ctype)
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("snapshot: fetch %s: %w", addr, err)
	}
	got, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode == http.StatusOK && got == ctype {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var he httpError
	if got == "application/json" && json.Unmarshal(body, &he) == nil && he.Error != "" {
		return nil, fmt.Errorf("snapshot: fetch %s: %s: %w", addr, resp.Status, remoteError(he))
	}
	if resp.StatusCode == http.StatusOK {
		return nil, fmt.Errorf("snapshot: fetch %s: got Content-Type %q, want %q: is it the address of an informerdb snapshot handler?", addr, resp.Header.Get("Content-Type"), ctype)
	}
	return nil, fmt.Errorf("snapshot: fetch %s: %s: %q", addr, resp.Status, strings.TrimSpace(string(body)))
}

// remoteError rebuilds a Handler's error, wrapping the sentinel its reason
// names.
func remoteError(he httpError) error {
	for _, r := range reasons {
		if r.name == he.Reason {
			return &wrapped{msg: he.Error, err: r.err}
		}
	}
	return errors.New(he.Error)
}

// wrapped is an error message of another process and the sentinel error it
// wraps there.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// Fetch saves the snapshot that the Handler at rawURL (the prefix it is
// mounted under, or its snapshot endpoint) serves to path, as Save would,
// and returns its manifest: the stream is written to a temporary file,
// verified in full as by Read, fsynced, and only then renamed over path,
// so that a stream cut short never replaces path. The Handler's errors
// wrap the store sentinel errors they wrapped in the serving process
// (store.ErrClosed while it has no store open, store.ErrNotFound for an
// unknown store). o may be nil.
func Fetch(ctx context.Context, path, rawURL string, o *FetchOptions) (m *Manifest, err error) {
	if o == nil {
		o = &FetchOptions{}
	}
	addr, err := endpoint(rawURL, "snapshot", o.Stores)
	if err != nil {
		return nil, err
	}
	resp, err := get(ctx, o, addr, ContentType)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	err = snapfile.WriteFile(path, "snapshot: fetch "+addr+" to "+path, o.TempFile, func(f *os.File) error {
		n, err := io.Copy(f, resp.Body)
		// The trailer is there once the body has been read to its end.
		if msg := resp.Trailer.Get(ErrorTrailer); msg != "" {
			return fmt.Errorf("snapshot: fetch %s: the server stopped the snapshot after %d bytes: %s", addr, n, msg)
		}
		if err != nil {
			return fmt.Errorf("snapshot: fetch %s: the stream broke after %d bytes: %w", addr, n, err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("snapshot: fetch %s to %s: %w", addr, path, err)
		}
		m, err = ReadFrom(ctx, addr, f, n, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	m.Source = path
	return m, nil
}

// FetchStatus returns the status that the Handler at rawURL (the prefix it
// is mounted under, or one of its endpoints) serves: the manifest of its
// database, with the error of the stores it cannot read, as Status
// returns them. o may be nil.
func FetchStatus(ctx context.Context, rawURL string, o *FetchOptions) (*Manifest, error) {
	addr, err := endpoint(rawURL, "status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := get(ctx, o, addr, "application/json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	// A manifest is a few hundred bytes per store.
	var sr statusResponse
	dec := json.NewDecoder(io.LimitReader(resp.Body, MaxHeaderLen))
	if err := dec.Decode(&sr); err != nil {
		return nil, fmt.Errorf("snapshot: fetch %s: decode the status: %w", addr, err)
	}
	if sr.Manifest == nil {
		return nil, fmt.Errorf("snapshot: fetch %s: the status has no manifest", addr)
	}
	if len(sr.Unreadable) > 0 {
		errs := make([]error, 0, len(sr.Unreadable))
		for _, he := range sr.Unreadable {
			errs = append(errs, remoteError(he))
		}
		return sr.Manifest, fmt.Errorf("snapshot: status %s: %d of %d stores cannot be read (the manifest describes the others): %w",
			sr.Source, len(sr.Unreadable), len(sr.Unreadable)+len(sr.Stores), errors.Join(errs...))
	}
	return sr.Manifest, nil
}
