package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/snapshot"
)

// Sources at http:// and https:// addresses are the snapshot handlers of
// running processes (snapshot.NewHandler), which hold their databases.

const (
	insecureFlag  = "insecure-skip-tls-verify"
	tokenFileFlag = "token-file"
)

// addRemoteFlags adds the flags of http(s) sources to every command.
func addRemoteFlags(root *cobra.Command) {
	root.PersistentFlags().Bool(insecureFlag, false, "do not verify the certificate of an https:// source (for a self-signed one)")
	root.PersistentFlags().String(tokenFileFlag, "", "send the bearer token in this file to an http(s):// source (a metrics server that authenticates, as controller-runtime's can)")
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// fetchOptions returns the options of requests to a handler.
func fetchOptions(cmd *cobra.Command, stores []string) (*snapshot.FetchOptions, error) {
	insecure, err := cmd.Flags().GetBool(insecureFlag)
	if err != nil {
		return nil, err
	}
	tokenFile, err := cmd.Flags().GetString(tokenFileFlag)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if insecure {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // asked for by the flag
	}
	var rt http.RoundTripper = tr
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, usageError{fmt.Errorf("--%s: %w", tokenFileFlag, err)}
		}
		token := strings.TrimSpace(string(b))
		if token == "" || strings.ContainsAny(token, "\r\n") {
			return nil, usageError{fmt.Errorf("--%s %s: want one token on one line", tokenFileFlag, tokenFile)}
		}
		rt = bearer{token: token, next: tr}
	}
	return &snapshot.FetchOptions{Client: &http.Client{Transport: rt}, Stores: stores}, nil
}

// liveHint returns, for a command of args that failed as another process
// holds its database, how to read it through that process's handler.
func liveHint(args []string, err error) string {
	if !errors.Is(err, store.ErrLocked) {
		return ""
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		switch a {
		case "save", "status", "ls", "get", "by-index":
			return fmt.Sprintf("Hint: a running process holds the database. If it serves it (snapshot.NewHandler), %s reads it from the handler's address: snapshot %s http://HOST:PORT/PREFIX/ ... (through kubectl port-forward for a pod).", a, a)
		}
		return ""
	}
	return ""
}

// saveRemote is save from a handler: the stream is verified in full before
// it replaces file.
func saveRemote(cmd *cobra.Command, src, file string, stores []string) error {
	o, err := fetchOptions(cmd, stores)
	if err != nil {
		return err
	}
	var forget func()
	o.TempFile, forget = temps.track()
	m, err := snapshot.Fetch(cmd.Context(), file, src, o)
	forget()
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Saved %d stores, %d objects, from %s to %s (%d bytes).\n", len(m.Stores), objectCount(m), src, file, m.Size)
	return nil
}

// remoteStatus is status of a handler: its manifest, computed by the
// serving process from one view of its database.
func remoteStatus(cmd *cobra.Command, src string) (*snapshot.Manifest, error) {
	o, err := fetchOptions(cmd, nil)
	if err != nil {
		return nil, err
	}
	return snapshot.FetchStatus(cmd.Context(), src, o)
}

// localCopy returns target, or, for a handler's address, a temporary
// snapshot file fetched from it (only store, when not empty), which done
// removes.
func localCopy(cmd *cobra.Command, target, store string) (path string, done func(), err error) {
	if !snapshot.IsHTTP(target) {
		return target, func() {}, nil
	}
	var stores []string
	if store != "" {
		stores = []string{store}
	}
	o, err := fetchOptions(cmd, stores)
	if err != nil {
		return "", nil, err
	}
	f, err := os.CreateTemp("", "snapshot-remote-*.idb")
	if err != nil {
		return "", nil, fmt.Errorf("fetch %s: %w", target, err)
	}
	path = f.Name()
	temps.add(path)
	done = func() {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(cmd.ErrOrStderr(), "Note: %v\n", err)
		}
		temps.forget(path)
	}
	if err := f.Close(); err != nil {
		done()
		return "", nil, fmt.Errorf("fetch %s: %w", target, err)
	}
	var forget func()
	o.TempFile, forget = temps.track()
	_, err = snapshot.Fetch(cmd.Context(), path, target, o)
	forget()
	if err != nil {
		done()
		return "", nil, err
	}
	return path, done, nil
}
